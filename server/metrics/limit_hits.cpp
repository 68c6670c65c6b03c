#include "server/metrics/limit_hits.h"

namespace daxsmbd::server::metrics {

const char* limit_key(Limit l) {
    switch (l) {
        case Limit::MaxConnectionsTotal:
            return "max connections total";
        case Limit::MaxConnectionsPerAddress:
            return "max connections per address";
        case Limit::MaxSessionsPerConnection:
            return "max sessions per connection";
        case Limit::MaxTreeConnectsPerSession:
            return "max tree connects per session";
        case Limit::MaxOpensPerSession:
            return "max opens per session";
        case Limit::MaxLocksPerOpen:
            return "max locks per open";
        case Limit::MaxDurableHandlesPerClient:
            return "max durable handles per client";
        case Limit::MaxAsyncRequestsPerConnection:
            return "max async requests per connection";
        case Limit::MaxBytesInFlightPerConnection:
            return "max bytes in flight per connection";
        case Limit::MaxMessageSize:
            return "max message size";
        case Limit::MaxCompoundLength:
            return "max compound length";
        case Limit::AuthTimeout:
            return "auth timeout";
    }
    return "?";
}

}  // namespace daxsmbd::server::metrics
