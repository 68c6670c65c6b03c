// Result<T>: a value or an NtStatus. std::expected of libstdc++ 12 does not build with clang 14
// (the fuzzers need clang), so daxsmbd carries its own small type.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "protocol/status.h"

namespace daxsmbd {

// Tag to build a failed Result: `return Error(NtStatus::InvalidParameter);`
struct Error {
    NtStatus status;
    explicit constexpr Error(NtStatus s) : status(s) {}
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
    Result(Error e) : v_(std::in_place_index<1>, e.status) { assert(e.status != NtStatus::Success); }

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    NtStatus status() const { return ok() ? NtStatus::Success : std::get<1>(v_); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }

private:
    std::variant<T, NtStatus> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error e) : status_(e.status) {}  // NOLINT
    bool ok() const { return status_ == NtStatus::Success; }
    explicit operator bool() const { return ok(); }
    NtStatus status() const { return status_; }

private:
    NtStatus status_ = NtStatus::Success;
};

using Status = Result<void>;

// Propagate a failure: `DAX_TRY(auto x, parse(...));`
#define DAX_CONCAT_INNER(a, b) a##b
#define DAX_CONCAT(a, b) DAX_CONCAT_INNER(a, b)
#define DAX_TRY(decl, expr)                                                      \
    auto DAX_CONCAT(dax_try_, __LINE__) = (expr);                                \
    if (!DAX_CONCAT(dax_try_, __LINE__)) return ::daxsmbd::Error(DAX_CONCAT(dax_try_, __LINE__).status()); \
    decl = std::move(DAX_CONCAT(dax_try_, __LINE__)).value()
#define DAX_CHECK(expr)                                                         \
    do {                                                                        \
        auto dax_chk_ = (expr);                                                 \
        if (!dax_chk_) return ::daxsmbd::Error(dax_chk_.status());              \
    } while (0)

}  // namespace daxsmbd
