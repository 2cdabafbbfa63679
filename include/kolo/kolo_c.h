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
               KOLO_INT8, KOLO_UINT8, KOLO_INT32, KOLO_INT64, KOLO_INT16 } kolo_dtype;
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
 * device memory. A buffer too small (or NULL) fails with KOLO_INVALID_ARGUMENT and keeps
 * the handle: kolo_output_bytes says what it needs. */
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

/* ---- Process sets (docs/process_sets.md) ----
 * A process set is named by its id: 0 is the global set (every rank). The functions above
 * run on the global set; each has a `_ps` variant below with one more, last parameter,
 * `int process_set`. Functions added with process sets take `process_set` directly. A rank
 * outside the set gets KOLO_INVALID_ARGUMENT at once. Ranks given to an operation (a
 * broadcast's root) and returned by kolo are ranks of the global set. Names: NULL is
 * KOLO_INVALID_ARGUMENT, "" gets an automatic name ("allreduce.noname.3"), so unnamed calls
 * made in the same order on every rank match. Functions that return a count write at most
 * `capacity` entries and return the full count (call with NULL, 0 to size the array). */

/* kolo_init with static process sets, flattened: set i has set_sizes[i] ranks, listed one
 * set after another in `ranks`. Ids are 1 ... num_sets in that order. Bad lists are
 * KOLO_INVALID_ARGUMENT on every rank, kolo not started (kolo::init(lists)). */
int kolo_init_with_process_sets(const int* ranks, const int* set_sizes, int num_sets);
/* Need KOLO_DYNAMIC_PROCESS_SETS=1; collective: every rank calls them in the same order.
 * add: the new set's id (> 0). remove: KOLO_OK; set 0 or an unknown set is an error. */
int kolo_add_process_set(const int* ranks, int n);
int kolo_remove_process_set(int process_set);
/* The ids of every set of the job, ascending (0 first): the count. */
int kolo_process_set_ids(int* ids, int capacity);
/* A set's ranks, ascending: the count; KOLO_INVALID_ARGUMENT for an unknown set. */
int kolo_process_set_ranks(int process_set, int* ranks, int capacity);
/* This rank's index in the set, or -1 when it is not in it (-1 is no kolo_status of this
 * call); the set's size; 1 or 0. KOLO_INVALID_ARGUMENT for an unknown set. */
int kolo_process_set_rank(int process_set);
int kolo_process_set_size(int process_set);
int kolo_process_set_included(int process_set);

kolo_handle kolo_allreduce_async_ps(const char* name, const void* input, void* output,
                                    kolo_dtype dtype, int ndim, const int64_t* shape, kolo_op op,
                                    double prescale, double postscale, int device, int process_set);
/* root: a rank of the global set that is in the set. */
kolo_handle kolo_broadcast_async_ps(const char* name, void* buffer, kolo_dtype dtype, int ndim,
                                    const int64_t* shape, int root, int device, int process_set);
kolo_handle kolo_allgather_async_ps(const char* name, const void* input, kolo_dtype dtype,
                                    int ndim, const int64_t* shape, int device, int process_set);
/* splits: one row count per rank of the set (kolo_process_set_size()), in the set's order;
 * NULL for an equal split. */
kolo_handle kolo_alltoall_async_ps(const char* name, const void* input, kolo_dtype dtype, int ndim,
                                   const int64_t* shape, const int64_t* splits, int device,
                                   int process_set);
/* With reducescatter's prescale and postscale (floating-point dtypes; 1.0 for none). */
kolo_handle kolo_reducescatter_async_ps(const char* name, const void* input, kolo_dtype dtype,
                                        int ndim, const int64_t* shape, kolo_op op, double prescale,
                                        double postscale, int device, int process_set);
int kolo_barrier_ps(int process_set);
/* Blocks until every rank of the set has joined; stores the (global) rank that joined last
 * in *last_rank unless it is NULL. */
int kolo_join_ps(int process_set, int* last_rank);

/* ---- Grouped operations: negotiated and run as one unit ----
 * `count` (>= 1) members, each with names[i], inputs[i] (outputs[i]), ndims[i] and
 * shapes[i]; one dtype and device for the group. On success returns KOLO_OK and writes
 * count handles into handles[]; on failure returns the status and writes it into every
 * handles[i]. Results of allgather and reducescatter: kolo_wait_output on each handle. */
int kolo_grouped_allreduce_async(int count, const char* const* names, const void* const* inputs,
                                 void* const* outputs, kolo_dtype dtype, const int* ndims,
                                 const int64_t* const* shapes, kolo_op op, double prescale,
                                 double postscale, int device, int process_set,
                                 kolo_handle* handles);
int kolo_grouped_allgather_async(int count, const char* const* names, const void* const* inputs,
                                 kolo_dtype dtype, const int* ndims, const int64_t* const* shapes,
                                 int device, int process_set, kolo_handle* handles);
int kolo_grouped_reducescatter_async(int count, const char* const* names,
                                     const void* const* inputs, kolo_dtype dtype, const int* ndims,
                                     const int64_t* const* shapes, kolo_op op, double prescale,
                                     double postscale, int device, int process_set,
                                     kolo_handle* handles);

/* For alltoall: the rows received from each rank of the set; for kolo_allgather_bytes: the
 * bytes from each rank. The count (the set's size; 0 for other operations), KOLO_PENDING if
 * not done. Does not release the handle. */
int kolo_received_splits(kolo_handle h, int64_t* splits, int capacity);

/* ---- Byte buffers (broadcast_object / allgather_object) ----
 * Blocking and collective. Each returns a handle that is already done and holds the
 * result: size it with kolo_output_bytes, copy it out with kolo_wait_output (which
 * releases the handle; *first_dim is the size in bytes), or drop it with kolo_wait.
 * broadcast: root's `nbytes` bytes on every rank (other ranks' bytes are not read).
 * allgather: every rank's bytes concatenated in the set's order; each rank's size via
 * kolo_received_splits. `bytes` may be NULL when nbytes is 0. */
kolo_handle kolo_broadcast_bytes(const char* name, const void* bytes, int64_t nbytes, int root,
                                 int process_set);
kolo_handle kolo_allgather_bytes(const char* name, const void* bytes, int64_t nbytes,
                                 int process_set);

/* ---- Timeline (KOLO_TIMELINE=DYNAMIC leaves it to these) ----
 * Rank 0 writes `path` (KOLO_IO_ERROR if it cannot); other ranks' calls do nothing.
 * Starting one while another is open closes the first. mark_cycles: 1 or 0. */
int kolo_start_timeline(const char* path, int mark_cycles);
int kolo_stop_timeline(void);

/* ---- Build and environment queries: 1 or 0 (kolo_nccl_built: a version) ----
 * The first three need no kolo_init; the last two need it (KOLO_INVALID_ARGUMENT before:
 * kolo_mpi_threads_supported needs MPI initialised, kolo_is_homogeneous kolo). */
int kolo_mpi_built(void);
int kolo_nccl_built(void);  /* the NCCL_VERSION_CODE kolo was built with (e.g. 22809), 0 without NCCL */
int kolo_cuda_built(void);
int kolo_mpi_threads_supported(void); /* MPI's thread level is MPI_THREAD_MULTIPLE */
int kolo_is_homogeneous(void);        /* every node runs the same number of ranks */

/* The message of this thread's last failure; "" before any. Each thread has its own; it
 * stays valid until that thread's next failure. */
const char* kolo_error_message(void);
/* The former name of kolo_error_message(), kept for one release. */
const char* kolo_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KOLO_C_H */
