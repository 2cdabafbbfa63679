// Catch2 for tests that use LibTorch. LibTorch's headers bring glog's CHECK macro, which
// would silently stand in for Catch's (and abort the rank on failure): LibTorch comes first
// here, its CHECK goes, and Catch defines its own.
#pragma once

#ifdef TWOBLUECUBES_SINGLE_INCLUDE_CATCH_HPP_INCLUDED
#error "catch_after_torch.h must come before anything that includes catch2/catch.hpp"
#endif
#include <torch/torch.h>

#undef CHECK
#include <catch2/catch.hpp>
