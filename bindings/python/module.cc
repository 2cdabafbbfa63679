// kolo.torch._C: the one extension module of the kolo Python package. It maps kolo/torch.h
// (and the parts of kolo/kolo.h a script needs) onto Python, one function each; argument
// defaults, autograd and the optimizer live in the package's Python files. Ops and
// compressions travel as kolo's enum values, process sets as their ids.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/python.h>

#include <optional>

#include "kolo/elastic.h"
#include "kolo/torch.h"

namespace py = pybind11;
using namespace kolo;

namespace {

using release_gil = py::call_guard<py::gil_scoped_release>;

AllreduceOptions allreduce_options(int op, double prescale, double postscale, int compression, int set) {
  AllreduceOptions options;
  options.op = static_cast<ReduceOp>(op);
  options.prescale = prescale;
  options.postscale = postscale;
  options.compression = static_cast<Compression>(compression);
  options.process_set = ProcessSet(set);
  return options;
}

ReducescatterOptions reducescatter_options(int op, double prescale, double postscale, int set) {
  ReducescatterOptions options;
  options.op = static_cast<ReduceOp>(op);
  options.prescale = prescale;
  options.postscale = postscale;
  options.process_set = ProcessSet(set);
  return options;
}

void define_lifetime(py::module_& m) {
  m.def("init", [](std::optional<std::vector<std::vector<int>>> sets) { sets ? init(*sets) : init(); },
        py::arg("process_sets") = py::none(), release_gil());
  m.def("shutdown", &shutdown, release_gil());
  m.def("is_initialized", &is_initialized);
  m.def("rank", &rank);
  m.def("size", &size);
  m.def("local_rank", &local_rank);
  m.def("local_size", &local_size);
  m.def("cross_rank", &cross_rank);
  m.def("cross_size", &cross_size);
  m.def("is_homogeneous", &is_homogeneous);
  m.def("mpi_built", &mpi_built);
  m.def("gloo_built", &gloo_built);
  m.def("gloo_enabled", &gloo_enabled);
  m.def("mpi_enabled", &mpi_enabled);
  m.def("is_elastic", &kolo::elastic::is_elastic);
  m.def("stopped_by_other_ranks", &kolo::elastic::stopped_by_other_ranks);
  m.def("hosts_changed", &kolo::elastic::hosts_changed, release_gil());
  m.def("nccl_built", &nccl_built);
  m.def("cuda_built", &cuda_built);
  m.def("mpi_threads_supported", &mpi_threads_supported);
  m.def("describe_configuration", &describe_configuration);
  m.def("start_timeline", &start_timeline, py::arg("path"), py::arg("mark_cycles") = false);
  m.def("stop_timeline", &stop_timeline);
}

void define_process_sets(py::module_& m) {
  m.def("process_sets", &process_sets);
  m.def("add_process_set", [](const std::vector<int>& ranks) { return add_process_set(ranks).id(); }, release_gil());
  m.def("remove_process_set", [](int id) { remove_process_set(ProcessSet(id)); }, release_gil());
  m.def("process_set_ranks", [](int id) { return ProcessSet(id).ranks(); });
  m.def("process_set_rank", [](int id) { return ProcessSet(id).rank(); });
  m.def("process_set_size", [](int id) { return ProcessSet(id).size(); });
  m.def("process_set_included", [](int id) { return ProcessSet(id).included(); });
}

void define_collectives(py::module_& m) {
  py::class_<kolo::torch::Handle>(m, "Handle")
      .def("ready", &kolo::torch::Handle::ready)
      .def("wait", &kolo::torch::Handle::wait, release_gil())
      .def("received_splits", &kolo::torch::Handle::received_splits, release_gil());

  m.def("allreduce_async",
        [](const at::Tensor& t, const std::string& name, int op, double pre, double post, int compression, int set,
           bool in_place) {
          auto options = allreduce_options(op, pre, post, compression, set);
          return in_place ? kolo::torch::allreduce_async_(t, name, options)
                          : kolo::torch::allreduce_async(t, name, options);
        });
  m.def("grouped_allreduce_async",
        [](const std::vector<at::Tensor>& ts, const std::string& name, int op, double pre, double post,
           int compression, int set, bool in_place) {
          auto options = allreduce_options(op, pre, post, compression, set);
          return in_place ? kolo::torch::grouped_allreduce_async_(ts, name, options)
                          : kolo::torch::grouped_allreduce_async(ts, name, options);
        });
  m.def("allgather_async", [](const at::Tensor& t, const std::string& name, int set) {
    return kolo::torch::allgather_async(t, name, ProcessSet(set));
  });
  m.def("grouped_allgather_async", [](const std::vector<at::Tensor>& ts, const std::string& name, int set) {
    return kolo::torch::grouped_allgather_async(ts, name, ProcessSet(set));
  });
  m.def("broadcast_async", [](const at::Tensor& t, int root, const std::string& name, int set, bool in_place) {
    return in_place ? kolo::torch::broadcast_async_(t, root, name, ProcessSet(set))
                    : kolo::torch::broadcast_async(t, root, name, ProcessSet(set));
  });
  m.def("alltoall_async",
        [](const at::Tensor& t, const std::vector<int64_t>& splits, const std::string& name, int set) {
          return kolo::torch::alltoall_async(t, splits, name, ProcessSet(set));
        });
  m.def("reducescatter_async", [](const at::Tensor& t, const std::string& name, int op, double pre, double post,
                                  int set) {
    return kolo::torch::reducescatter_async(t, name, reducescatter_options(op, pre, post, set));
  });
  m.def("grouped_reducescatter_async", [](const std::vector<at::Tensor>& ts, const std::string& name, int op,
                                          double pre, double post, int set) {
    return kolo::torch::grouped_reducescatter_async(ts, name, reducescatter_options(op, pre, post, set));
  });
  m.def("barrier", [](int set) { barrier(ProcessSet(set)); }, release_gil());
  m.def("join", [](int set) { return join(ProcessSet(set)); }, release_gil());
  m.def("broadcast_bytes", [](const std::string& name, const py::bytes& bytes, int root, int set) {
    std::string in = bytes;
    std::string out;
    {
      py::gil_scoped_release release;
      out = broadcast_bytes(name, in, root, ProcessSet(set));
    }
    return py::bytes(out);
  });
  m.def("allgather_bytes", [](const std::string& name, const py::bytes& bytes, int set) {
    std::string in = bytes;
    std::vector<std::string> out;
    {
      py::gil_scoped_release release;
      out = allgather_bytes(name, in, ProcessSet(set));
    }
    py::list result;
    for (const std::string& b : out) result.append(py::bytes(b));
    return result;
  });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "kolo's collectives on torch tensors (kolo/torch.h); use the kolo.torch package";

  // kolo::Error as KoloError (a RuntimeError) whose .code is the StatusCode's name
  // ("Mismatch", "Stalled", ...). InvalidArgument, a call kolo rejects at once, raises
  // InvalidArgumentError, a KoloError that is also a ValueError: Horovod raises ValueError
  // for bad arguments.
  static py::exception<Error> error(m, "KoloError", PyExc_RuntimeError);
  // A handle, never released: the class lives as long as the interpreter.
  static py::handle invalid_argument = PyErr_NewException(
      "kolo.torch._C.InvalidArgumentError", py::make_tuple(error, py::handle(PyExc_ValueError)).ptr(), nullptr);
  m.attr("InvalidArgumentError") = invalid_argument;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::handle type = e.code() == StatusCode::InvalidArgument ? invalid_argument : py::handle(error);
      py::object instance = type(e.what());
      instance.attr("code") = status_code_name(e.code());
      PyErr_SetObject(type.ptr(), instance.ptr());
    }
  });

  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product,
                      ReduceOp::Adasum}) {
    std::string name = op_name(op);
    name[0] = static_cast<char>(std::toupper(name[0]));
    m.attr(name.c_str()) = static_cast<int>(op);
  }
  m.attr("COMPRESSION_NONE") = static_cast<int>(Compression::None);
  m.attr("COMPRESSION_FP16") = static_cast<int>(Compression::FP16);

  define_lifetime(m);
  define_process_sets(m);
  define_collectives(m);
}
