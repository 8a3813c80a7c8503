// expect: value: a scalar launch argument is a C++ floating-point or integer number
#include <tessel/tessel.hpp>
namespace ts = tessel;

void build() { (void)ts::value(true); }
