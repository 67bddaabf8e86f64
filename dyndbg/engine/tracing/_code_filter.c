/* The CodeFilter (see _settrace.c): before torch's C callback's Python
 * function, it installs the trace for generated code whose frames the
 * CallFilter starts. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../cpython/_attributes.h"
#include "_filters.h"
#include "_interned.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *generated;    /* registry.by_id */
    PyObject *starts;       /* the CallFilter's */
    PyObject *hooks;        /* .interrupt_pending */
    PyObject *policy;       /* .stepping, .version */
    PyObject *sink;         /* the engine: .detached */
    PyObject *thread;       /* the tracer's _thread: .installed, .suspended */
    PyObject *settrace;     /* sys.settrace */
    PyObject *trace;        /* what it installs: the CallFilter */
    PyObject *slow;         /* the hooks' _code_callback */
} CodeFilter;

/* As code_starting does for code whose frames start in the CallFilter (so
 * trace_level is ARMED or CALLS): the trace installed in this thread unless
 * it is, or dynamo compiles here. DYNDBG_ANSWERED: done (installed, or it
 * need not be), DYNDBG_SLOW_PATH, DYNDBG_ERROR */
static dyndbg_decision
code_decision(CodeFilter *self, PyObject *code)
{
    PyObject *start = dyndbg_start_of(self->starts, self->generated, code);     /* owned */
    if (start == NULL)
        return PyErr_Occurred() ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    dyndbg_decision answered = DYNDBG_ERROR;
    dyndbg_truth busy = dyndbg_attribute_true(self->sink, dyndbg_names.detached);
    if (busy == DYNDBG_FALSE)
        busy = dyndbg_attribute_true(self->hooks, dyndbg_names.interrupt_pending);
    if (busy == DYNDBG_FALSE)
        busy = dyndbg_attribute_true(self->policy, dyndbg_names.stepping);
    if (busy != DYNDBG_FALSE) {
        answered = busy == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
        goto done;
    }
    dyndbg_truth current = dyndbg_start_is_current(self->policy, start);
    if (current != DYNDBG_TRUE) {
        answered = current == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
        goto done;
    }
    dyndbg_truth installed = dyndbg_attribute_true(self->thread, dyndbg_names.installed);
    dyndbg_truth suspended = installed == DYNDBG_FALSE
        ? dyndbg_attribute_true(self->thread, dyndbg_names.suspended) : DYNDBG_FALSE;
    if (installed == DYNDBG_ERROR || suspended == DYNDBG_ERROR)
        goto done;
    if (!installed && !suspended) {     /* _install */
        if (PyObject_SetAttr(self->thread, dyndbg_names.installed, Py_True) < 0)
            goto done;
        PyObject *set = PyObject_CallOneArg(self->settrace, self->trace);    /* owned */
        if (set == NULL)
            goto done;
        Py_DECREF(set);
    }
    answered = DYNDBG_ANSWERED;
done:
    Py_DECREF(start);
    return answered;
}

static PyObject *
code_filter_call(CodeFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || !PyCode_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (code_decision(self, args[0]) == DYNDBG_ANSWERED)
        Py_RETURN_NONE;
    PyErr_Clear();      /* torch's C callback must not see one: _code_callback catches all */
    return PyObject_Vectorcall(self->slow, args, 1, NULL);
}

FILTER_TYPE(CodeFilter,
            Py_VISIT(self->generated); Py_VISIT(self->starts); Py_VISIT(self->hooks);
            Py_VISIT(self->policy); Py_VISIT(self->sink); Py_VISIT(self->thread);
            Py_VISIT(self->settrace); Py_VISIT(self->trace); Py_VISIT(self->slow);,
            Py_CLEAR(self->generated); Py_CLEAR(self->starts); Py_CLEAR(self->hooks);
            Py_CLEAR(self->policy); Py_CLEAR(self->sink); Py_CLEAR(self->thread);
            Py_CLEAR(self->settrace); Py_CLEAR(self->trace); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(CodeFilter, "the C callback's filter (settrace.py)")

PyObject *
dyndbg_code_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *generated, *starts, *hooks, *policy, *sink, *thread, *settrace, *trace,
        *slow;      /* borrowed */
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOO", &PyDict_Type, &generated, &PyDict_Type, &starts,
                          &hooks, &policy, &sink, &thread, &settrace, &trace, &slow))
        return NULL;
    CodeFilter *self = PyObject_GC_New(CodeFilter, &DyndbgCodeFilter_Type);     /* owned */
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)code_filter_call;
    self->generated = Py_NewRef(generated);
    self->starts = Py_NewRef(starts);
    self->hooks = Py_NewRef(hooks);
    self->policy = Py_NewRef(policy);
    self->sink = Py_NewRef(sink);
    self->thread = Py_NewRef(thread);
    self->settrace = Py_NewRef(settrace);
    self->trace = Py_NewRef(trace);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
