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
// kolo_grouped_allreduce_async, summed in place over `process_set`, of a[3] and b[2][2]
// (named name_a and name_b), from C: the group's arrays as C declares them. Writes the two
// handles; returns the call's status.
int c_caller_grouped_allreduce(const char* name_a, float* a, const char* name_b, float* b, int process_set,
                               kolo_handle* handles);
// kolo_broadcast_bytes of the string `text` (its bytes without the final NUL) from root,
// then kolo_wait_output into out[capacity]: the size received, or a status.
int64_t c_caller_broadcast_string(const char* name, const char* text, int root, int process_set, char* out,
                                  int64_t capacity);

#ifdef __cplusplus
}
#endif
