#include "c_caller.h"

#include <string.h>

static const int64_t kShape[1] = {4};

kolo_handle c_caller_allreduce(const char* name, float* buf, int dtype, int op) {
  return kolo_allreduce_async(name, buf, buf, (kolo_dtype)dtype, 1, kShape, (kolo_op)op, 1.0, 1.0, -1);
}

kolo_handle c_caller_reducescatter(const char* name, float* buf, int op) {
  return kolo_reducescatter_async(name, buf, KOLO_FLOAT32, 1, kShape, (kolo_op)op, -1);
}

int c_caller_grouped_allreduce(const char* name_a, float* a, const char* name_b, float* b, int process_set,
                               kolo_handle* handles) {
  static const int64_t shape_a[1] = {3};
  static const int64_t shape_b[2] = {2, 2};
  const char* names[2];
  const void* inputs[2];
  void* outputs[2];
  int ndims[2];
  const int64_t* shapes[2];
  names[0] = name_a;
  names[1] = name_b;
  inputs[0] = outputs[0] = a;
  inputs[1] = outputs[1] = b;
  ndims[0] = 1;
  ndims[1] = 2;
  shapes[0] = shape_a;
  shapes[1] = shape_b;
  return kolo_grouped_allreduce_async(2, names, inputs, outputs, KOLO_FLOAT32, ndims, shapes, KOLO_SUM, 1.0, 1.0,
                                      -1, process_set, handles);
}

int64_t c_caller_broadcast_string(const char* name, const char* text, int root, int process_set, char* out,
                                  int64_t capacity) {
  int64_t size = -1;
  int status;
  const kolo_handle h = kolo_broadcast_bytes(name, text, text == NULL ? 0 : (int64_t)strlen(text), root,
                                             process_set);
  if (h < 0) return h;
  if (kolo_output_bytes(h) > capacity) {
    kolo_wait(h);
    return KOLO_INVALID_ARGUMENT;
  }
  status = kolo_wait_output(h, out, capacity, &size);
  return status == KOLO_OK ? size : status;
}
