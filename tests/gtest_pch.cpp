// The object the unit tests' shared precompiled header is built with
// (tests/CMakeLists.txt, lumen_gtest_pch): nothing of its own.
