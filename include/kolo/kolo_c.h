/* kolo C API: plain C over the C++ runtime, for programs in other languages and for
 * tests that live outside the project.
 *
 * A failure returns a negative kolo_status that says what failed, and kolo_error_message()
 * gives its message. Every *_async call returns a handle > 0, or a kolo_status < 0 when
 * the call failed at once. kolo_wait() blocks until the operation is done, returns
 * KOLO_OK (0) on success, and releases the handle; kolo_poll() never blocks. Buffers must
 * stay valid until the handle is done. `input == output` (in place) is allowed. `device`
 * is -1 for CPU memory, or a CUDA ordinal for GPU memory where the build has a GPU backend.
 */
#ifndef KOLO_C_H
#define KOLO_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KOLO_FLOAT32, KOLO_FLOAT64, KOLO_FLOAT16, KOLO_BFLOAT16,
               KOLO_INT8, KOLO_UINT8, KOLO_INT32, KOLO_INT64 } kolo_dtype;
typedef enum { KOLO_SUM, KOLO_AVERAGE, KOLO_MIN, KOLO_MAX, KOLO_PRODUCT, KOLO_ADASUM } kolo_op;
typedef int64_t kolo_handle; /* > 0 valid; < 0 the call failed at once: a kolo_status */

/* What failed: kolo::StatusCode, negated (docs/c-api.md#status-codes). */
typedef enum {
  KOLO_OK = 0,
  KOLO_PENDING = -1,           /* not done yet (kolo_output_bytes) */
  KOLO_INVALID_ARGUMENT = -2,  /* rejected on this rank: bad argument, unknown handle, ... */
  KOLO_MISMATCH = -3,          /* ranks submitted the same name with different shape/dtype/op */
  KOLO_STALLED = -4,           /* not submitted by every rank in time */
  KOLO_ABORTED = -5,           /* kolo was shut down before the operation ran */
  KOLO_COMM_FAILURE = -6,      /* MPI or NCCL failed, or a rank was lost */
  KOLO_IO_ERROR = -7,          /* a file could not be read, written or made */
  KOLO_DEVICE_ERROR = -8,      /* the GPU (CUDA) reported an error */
  KOLO_INTERNAL = -9,          /* a bug in kolo */
  KOLO_UNSUPPORTED = -10       /* valid, but this build of kolo cannot do it */
} kolo_status;
/* "Ok", "InvalidArgument", ... (kolo::status_code_name); "unknown" for other values. */
const char* kolo_status_name(int status);

int kolo_init(void); /* KOLO_OK on success */
int kolo_shutdown(void);
int kolo_is_initialized(void); /* 1 or 0 */
/* Topology, as in kolo.h; KOLO_INVALID_ARGUMENT when kolo is not initialised. */
int kolo_rank(void);
int kolo_size(void);
int kolo_local_rank(void);
int kolo_local_size(void);
int kolo_cross_rank(void);
int kolo_cross_size(void);

kolo_handle kolo_allreduce_async(const char* name, const void* input, void* output,
                                 kolo_dtype dtype, int ndim, const int64_t* shape, kolo_op op,
                                 double prescale, double postscale, int device /* -1 = CPU */);
kolo_handle kolo_broadcast_async(const char* name, void* buffer, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int root, int device);
/* Result (the concatenation along the first dimension) is read with kolo_output_* before
 * kolo_wait releases the handle: call kolo_poll until it returns 1, or use
 * kolo_wait_output, which waits and copies the result into a caller's buffer. */
kolo_handle kolo_allgather_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                 const int64_t* shape, int device);
/* splits: `kolo_size()` row counts, or NULL for an equal split. */
kolo_handle kolo_alltoall_async(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                const int64_t* shape, const int64_t* splits, int device);
kolo_handle kolo_reducescatter_async(const char* name, const void* input, kolo_dtype dtype,
                                     int ndim, const int64_t* shape, kolo_op op, int device);

int kolo_poll(kolo_handle h); /* 1 done, 0 pending, KOLO_INVALID_ARGUMENT unknown handle */
int kolo_wait(kolo_handle h); /* KOLO_OK, or the operation's kolo_status */
/* For allgather/alltoall/reducescatter: waits, then copies the result into `output`
 * (capacity `output_bytes`), stores the result's first dimension in *first_dim when not
 * NULL, and releases the handle. 0 on success. A GPU result may be copied into host or
 * device memory. */
int kolo_wait_output(kolo_handle h, void* output, int64_t output_bytes, int64_t* first_dim);
/* Bytes of the result of a done allgather/alltoall/reducescatter handle; KOLO_PENDING if
 * not done. */
int64_t kolo_output_bytes(kolo_handle h);

int kolo_barrier(void);
int kolo_join(void);

/* GPU tensors (device >= 0; docs/gpu.md). The stream (a cudaStream_t, NULL: the legacy
 * default stream) on which the calling thread produces its GPU tensors: kolo records
 * each tensor's readiness on it at submission. Returns 0. */
int kolo_set_cuda_stream(void* cuda_stream);
/* Makes `cuda_stream` wait on the device for the operation, without the host waiting for
 * it to finish; does not release the handle (kolo_wait still does). 0 on success. */
int kolo_wait_on_stream(kolo_handle h, void* cuda_stream);

/* The message of this thread's last failure; "" before any. Each thread has its own; it
 * stays valid until that thread's next failure. */
const char* kolo_error_message(void);
/* The former name of kolo_error_message(), kept for one release. */
const char* kolo_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KOLO_C_H */
