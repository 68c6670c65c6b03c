// Boost.JSON's implementation, compiled once into the server library (Debian ships Boost.JSON
// header-only usable this way; no extra shared library to depend on).
#include <boost/json/src.hpp>
