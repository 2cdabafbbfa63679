// Calls into the C API made from C (c_caller.c): a C program may pass any int as a
// kolo_dtype or a kolo_op, since a C enum holds every value of its integer type, while in
// C++ a value outside the enumerators is undefined. c_api_test.cc checks through these
// that the C API rejects such values.
#pragma once

#include "kolo/kolo_c.h"

#ifdef __cplusplus
extern "C" {
#endif

// kolo_allreduce_async of the 4 floats at `buf` in place, with these dtype and op.
kolo_handle c_caller_allreduce(const char* name, float* buf, int dtype, int op);
// kolo_reducescatter_async of the 4 floats at `buf`, with this op.
kolo_handle c_caller_reducescatter(const char* name, float* buf, int op);

#ifdef __cplusplus
}
#endif
