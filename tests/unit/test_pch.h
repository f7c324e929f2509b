// Precompiled for every unit test (tests/CMakeLists.txt): the headers nearly all of them include.
// Each test still includes what it uses; this only saves parsing them once per program.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
