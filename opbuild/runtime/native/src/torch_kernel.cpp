// torch_kernel.cpp: the CPU kernel of the torch ops (torch.ops.<namespace>.<op>) in C++ (issue 24).
//
// What: one boxed kernel object per op, registered with torch's dispatcher for the CPU key (and an
// autograd kernel whose backward raises, NoBackward) by
// opbuild/runtime/torch_ops.py (through `opbuild_torch_register`, called with ctypes). Its hit
// path reads the tensors' data pointers, shapes, strides and dtypes and hands them to the
// runtime's one-shot call through _fastpath's C entry (oneshot_api.h, oneshot.c's raw hit): the
// same output-spec cache, the same native plan table (keyed from the tensors' memory, no numpy
// arrays) and the same launch as `api.call`; the outputs are at::empty tensors of the cached specs. A call that path does not serve -- no cached specs yet, a
// non-contiguous tensor, a dtype numpy has no view of, an op without phase functions -- calls the
// op's Python kernel (torch_ops._cpu_kernel), the reference, which also fills the caches so that
// the next such call is a hit. Errors are the Python kernel's and the phases' own (AclnnError):
// raised as Python exceptions through torch's boundary.
// Why: the Python kernel's dispatch and its numpy views cost 4-7x torch.add for a 1-element add.
//
// Built on first use by opbuild/runtime/torch_build.py against the installed torch (not by
// setup.py: torch is optional). Every function runs with the GIL held (taken here when torch
// calls a kernel without it).
#include <Python.h>

#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oneshot_api.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxTensors = 64;
constexpr int kMaxHitOutputs = 8;  // outputs the hit path allocates on the stack (more: the Python kernel)
constexpr int kScalarTypes = static_cast<int>(c10::ScalarType::NumOptions);

const oneshot_api *g_api = nullptr;
PyObject *g_state = nullptr;              // the runtime's plan cache state (owned)
PyObject *g_descrs[kScalarTypes] = {};    // per torch dtype, the numpy dtype its numpy view has (owned)
std::atomic<unsigned long long> g_hits{0}, g_misses{0};
std::map<std::string, std::unique_ptr<torch::Library>> g_libraries;  // namespace -> its CPU IMPL block

// The GIL for the scope: torch calls a kernel with it released (invokeOperatorFromPython), or held
// (from C++ code called by Python). PyGILState's own check, without pybind11's internals lookup.
struct Gil {
    PyGILState_STATE state;
    Gil() : state(PyGILState_Ensure()) {}
    ~Gil() { PyGILState_Release(state); }
    Gil(const Gil &) = delete;
    Gil &operator=(const Gil &) = delete;
};

// The torch dtype of a numpy dtype (g_descrs' inverse), or Undefined.
c10::ScalarType scalar_type_of(PyObject *descr) {
    for (int i = 0; i < kScalarTypes; i++)
        if (g_descrs[i] == descr) return static_cast<c10::ScalarType>(i);
    for (int i = 0; i < kScalarTypes; i++) {
        if (g_descrs[i] == nullptr) continue;
        int eq = PyObject_RichCompareBool(g_descrs[i], descr, Py_EQ);
        if (eq < 0) PyErr_Clear();
        if (eq > 0) return static_cast<c10::ScalarType>(i);
    }
    return c10::ScalarType::Undefined;
}

// The outputs of one call, allocated by alloc_output.
struct Outputs {
    at::Tensor tensors[kMaxHitOutputs];
    int64_t strides[kMaxHitOutputs][ONESHOT_API_MAX_DIMS];
};

int alloc_output(void *ctx, int index, PyObject *descr, int ndim, const int64_t *dims, oneshot_tensor *out) {
    auto *outs = static_cast<Outputs *>(ctx);
    c10::ScalarType type = scalar_type_of(descr);
    if (index < 0 || index >= kMaxHitOutputs || type == c10::ScalarType::Undefined) return -1;
    try {
        at::Tensor t = at::empty(c10::IntArrayRef(dims, static_cast<size_t>(ndim)), at::TensorOptions().dtype(type));
        int64_t itemsize = static_cast<int64_t>(t.element_size());
        for (int d = 0; d < ndim; d++) outs->strides[index][d] = t.stride(d) * itemsize;
        out->data = t.data_ptr();
        out->descr = descr;
        out->ndim = ndim;
        out->dims = t.sizes().data();
        out->strides = outs->strides[index];
        outs->tensors[index] = std::move(t);
    } catch (const std::exception &) {  // too large: the Python kernel says which output
        return -1;
    }
    return 0;
}

// A scalar attribute as Python object (new reference), or nullptr (no exception) for a value the
// simple ops do not take.
PyObject *attr_object(const c10::IValue &v) {
    if (v.isNone()) return Py_NewRef(Py_None);
    if (v.isDouble()) return PyFloat_FromDouble(v.toDouble());
    if (v.isBool()) return PyBool_FromLong(v.toBool());
    if (v.isInt()) return PyLong_FromLongLong(v.toInt());
    if (v.isString()) {
        const std::string &s = v.toStringRef();
        return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
    }
    return nullptr;
}

class OpKernel final : public c10::OperatorKernel {
  public:
    OpKernel(std::string name, PyObject *op, PyObject *python_kernel, int n_in, int n_attr, int n_out)
        : name_(std::move(name)), op_(Py_NewRef(op)), python_kernel_(Py_NewRef(python_kernel)), n_in_(n_in),
          n_attr_(n_attr), n_out_(n_out) {}
    // (the op objects live as long as the process: the dispatcher keeps the kernel)

    void operator()(const c10::OperatorHandle &, c10::DispatchKeySet, torch::jit::Stack *stack) {
        const size_t n_args = static_cast<size_t>(n_in_ + n_attr_);
        auto args = torch::jit::last(*stack, n_args);
        Gil gil;
        PyObject *attrs = PyTuple_New(n_attr_);
        if (attrs == nullptr) throw pybind11::error_already_set();
        bool fast = g_api != nullptr;
        for (int i = 0; i < n_attr_; i++) {
            PyObject *v = attr_object(args[static_cast<size_t>(n_in_ + i)]);
            if (v == nullptr) {
                PyErr_Clear();
                fast = false;
                v = Py_NewRef(Py_None);
            }
            PyTuple_SET_ITEM(attrs, i, v);
        }
        if (fast && hit(args, attrs, stack)) {
            Py_DECREF(attrs);
            return;
        }
        Py_DECREF(attrs);
        miss(args, stack);
    }

  private:
    // The hit path: true when the outputs are on the stack; false when the one-shot path did not
    // serve the call (nothing ran); a Python exception (the phases') is thrown.
    bool hit(c10::ArrayRef<c10::IValue> args, PyObject *attrs, torch::jit::Stack *stack) {
        oneshot_tensor inputs[kMaxTensors];
        int64_t strides[kMaxTensors][ONESHOT_API_MAX_DIMS];
        if (n_in_ > kMaxTensors || n_out_ > kMaxHitOutputs) return false;
        for (int i = 0; i < n_in_; i++) {
            const c10::IValue &v = args[static_cast<size_t>(i)];
            if (!v.isTensor()) return false;
            const at::Tensor &t = v.toTensor();
            if (!t.defined() || !t.device().is_cpu() || t.layout() != c10::kStrided || !t.is_contiguous() ||
                t.dim() > ONESHOT_API_MAX_DIMS || t.is_conj() || t.is_neg())
                return false;
            PyObject *descr = g_descrs[static_cast<int>(t.scalar_type())];
            if (descr == nullptr) return false;
            int64_t itemsize = static_cast<int64_t>(t.element_size());
            for (int64_t d = 0; d < t.dim(); d++) strides[i][d] = t.stride(d) * itemsize;
            inputs[i] = oneshot_tensor{t.data_ptr(), descr, static_cast<int>(t.dim()), t.sizes().data(), strides[i]};
        }
        Outputs outs;
        int rc = g_api->run(g_state, op_, n_in_, inputs, attrs, alloc_output, &outs);
        if (rc < 0) throw pybind11::error_already_set();
        if (rc == 0) return false;
        g_hits++;
        torch::jit::drop(*stack, static_cast<size_t>(n_in_ + n_attr_));
        for (int i = 0; i < n_out_; i++) torch::jit::push(*stack, std::move(outs.tensors[i]));
        return true;
    }

    // The miss path: the op's Python kernel with the same arguments.
    void miss(c10::ArrayRef<c10::IValue> args, torch::jit::Stack *stack) {
        g_misses++;
        PyObject *py_args = PyTuple_New(n_in_ + n_attr_);
        if (py_args == nullptr) throw pybind11::error_already_set();
        for (int i = 0; i < n_in_ + n_attr_; i++) {
            const c10::IValue &v = args[static_cast<size_t>(i)];
            PyObject *o = i < n_in_ ? (v.isTensor() ? THPVariable_Wrap(v.toTensor()) : attr_object(v)) : attr_object(v);
            if (o == nullptr) {
                Py_DECREF(py_args);
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError, "%s: argument %d (%s) is not one the opbuild torch kernel takes",
                                 name_.c_str(), i, v.tagKind().c_str());
                throw pybind11::error_already_set();
            }
            PyTuple_SET_ITEM(py_args, i, o);
        }
        PyObject *result = PyObject_Call(python_kernel_, py_args, nullptr);
        Py_DECREF(py_args);
        if (result == nullptr) throw pybind11::error_already_set();
        std::vector<at::Tensor> outs(static_cast<size_t>(n_out_));
        bool ok = true;
        if (n_out_ == 1) {
            ok = THPVariable_Check(result);
            if (ok) outs[0] = THPVariable_Unpack(result);
        } else {
            ok = PyTuple_Check(result) && PyTuple_GET_SIZE(result) == n_out_;
            for (int i = 0; ok && i < n_out_; i++) {
                PyObject *o = PyTuple_GET_ITEM(result, i);
                ok = THPVariable_Check(o);
                if (ok) outs[static_cast<size_t>(i)] = THPVariable_Unpack(o);
            }
        }
        Py_DECREF(result);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s: the Python kernel did not return %d tensor(s)", name_.c_str(), n_out_);
            throw pybind11::error_already_set();
        }
        torch::jit::drop(*stack, static_cast<size_t>(n_in_ + n_attr_));
        for (auto &t : outs) torch::jit::push(*stack, std::move(t));
    }

    std::string name_;
    PyObject *op_, *python_kernel_;
    int n_in_, n_attr_, n_out_;
};

// The op's autograd kernel: the call below autograd, and when a gradient is wanted (grad mode on,
// an input requiring grad) outputs whose grad_fn raises `message` in backward (the ops are
// forward-only). The same as torch_ops._no_backward through torch.library.register_autograd,
// without a Python autograd.Function per call.
class NoBackward final : public c10::OperatorKernel {
  public:
    NoBackward(std::string message, int n_in, int n_attr, int n_out)
        : message_(std::move(message)), n_in_(n_in), n_attr_(n_attr), n_out_(n_out) {}

    void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet ks, torch::jit::Stack *stack) {
        std::vector<at::Tensor> inputs;  // (filled only when a gradient is wanted: no allocation per call)
        bool wanted = false;
        if (at::GradMode::is_enabled()) {
            auto args = torch::jit::last(*stack, static_cast<size_t>(n_in_ + n_attr_));
            for (int i = 0; i < n_in_ && !wanted; i++) {
                const c10::IValue &v = args[static_cast<size_t>(i)];
                wanted = v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad();
            }
            for (int i = 0; wanted && i < n_in_; i++) {
                const c10::IValue &v = args[static_cast<size_t>(i)];
                if (v.isTensor()) inputs.push_back(v.toTensor());
            }
        }
        {
            at::AutoDispatchBelowADInplaceOrView guard;
            op.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
        }
        if (!wanted) return;
        auto node = c10::make_intrusive<torch::autograd::Error>(message_, torch::autograd::collect_next_edges(inputs));
        for (auto &v : torch::jit::last(*stack, static_cast<size_t>(n_out_)))
            if (v.isTensor() && v.toTensor().defined() && torch::autograd::isDifferentiableType(v.toTensor().scalar_type()))
                torch::autograd::set_history(v.toTensor(), node);
    }

  private:
    std::string message_;
    int n_in_, n_attr_, n_out_;
};

}  // namespace

// init(oneshot_api capsule, plan cache state, {torch dtype: numpy dtype of its view}) -> None.
// Called once, before any register.
EXPORT PyObject *opbuild_torch_init(PyObject *capsule, PyObject *state, PyObject *dtypes) {
    auto *api = static_cast<const oneshot_api *>(PyCapsule_GetPointer(capsule, ONESHOT_API_CAPSULE));
    if (api == nullptr) return nullptr;
    if (api->version != ONESHOT_API_VERSION) {
        PyErr_Format(PyExc_ImportError, "_fastpath's oneshot_api is version %d, this kernel was built for %d",
                     api->version, ONESHOT_API_VERSION);
        return nullptr;
    }
    if (!PyDict_Check(dtypes)) {
        PyErr_SetString(PyExc_TypeError, "dtypes: a dict {torch dtype: numpy dtype}");
        return nullptr;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dtypes, &pos, &key, &value)) {
        if (!THPDtype_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "dtypes: a key is not a torch dtype");
            return nullptr;
        }
        int index = static_cast<int>(reinterpret_cast<THPDtype *>(key)->scalar_type);
        if (index >= 0 && index < kScalarTypes) Py_XSETREF(g_descrs[index], Py_NewRef(value));
    }
    Py_XSETREF(g_state, Py_NewRef(state));
    g_api = api;
    Py_RETURN_NONE;
}

// register(namespace, name, op, python_kernel, n_inputs, n_attrs, n_outputs, no_backward_message)
// -> None: the op's CPU kernel and its autograd kernel (the op is defined already, by
// torch_ops.register).
EXPORT PyObject *opbuild_torch_register(const char *ns, const char *name, PyObject *op, PyObject *python_kernel,
                                        int n_in, int n_attr, int n_out, const char *no_backward) {
    if (n_in < 0 || n_attr < 0 || n_out < 1 || n_in > kMaxTensors || n_out > kMaxTensors) {
        PyErr_Format(PyExc_ValueError, "%s::%s: %d inputs, %d attrs, %d outputs", ns, name, n_in, n_attr, n_out);
        return nullptr;
    }
    try {
        auto &lib = g_libraries[ns];
        if (!lib) lib = std::make_unique<torch::Library>(torch::Library::IMPL, ns, std::nullopt, __FILE__, __LINE__);
        lib->impl(name, torch::dispatch(c10::DispatchKey::CPU,
                                        torch::CppFunction::makeFromBoxedFunctor(std::make_unique<OpKernel>(
                                            std::string(ns) + "::" + name, op, python_kernel, n_in, n_attr, n_out))));
        lib->impl(name, torch::dispatch(c10::DispatchKey::Autograd,
                                        torch::CppFunction::makeFromBoxedFunctor(
                                            std::make_unique<NoBackward>(no_backward, n_in, n_attr, n_out))));
    } catch (const c10::Error &e) {
        PyErr_Format(PyExc_RuntimeError, "%s::%s: %s", ns, name, e.what_without_backtrace());
        return nullptr;
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "%s::%s: %s", ns, name, e.what());
        return nullptr;
    }
    Py_RETURN_NONE;
}

// stats() -> (hits, misses): the calls the C++ hit path served, and those it handed to the Python kernel.
EXPORT PyObject *opbuild_torch_stats(void) {
    return Py_BuildValue("(KK)", g_hits.load(), g_misses.load());
}
