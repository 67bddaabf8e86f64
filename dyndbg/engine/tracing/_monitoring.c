/* The compiled INSTRUCTION callback of the sys.monitoring mechanism
 * (monitoring.py, Python 3.12+).
 *
 * A filter in front of MonitoringTracer._on_instruction for the codes listed
 * in `fast` (id(code) -> (record, spec, slow offsets, after, checks)), filled
 * by _on_instruction and emptied by monitoring.py (then forget()) whenever
 * the engine's mode or breakpoints change. While the engine only records
 * (`record on`, continuing, no trace), an instruction is recorded here by
 * the compiled History, in the frame running it; while it does not record,
 * an armed offset with a ConditionCheck has its condition evaluated here,
 * and a false one only counts the hit. Both under the engine lock. Everything else, and
 * every listed slow offset (an armed breakpoint while recording, a 3.12
 * resume call site), goes to _on_instruction. A failure goes to _fail.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>

#include "_fast_paths.h"

static PyObject *str_detached, *str_instruction;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fast;         /* id(code) -> (record, spec, slow offsets, after, checks) */
    PyObject *conditions;   /* the engine's Conditions */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *fail;         /* the tracer's _fail(error) */
    PyObject *slow;         /* _on_instruction(code, offset) */
    /* The entry of `fast` found last, for the code it is of: a code's
     * instructions run in a row, and the look-up by id costs more than the
     * rest of the decision. forget() drops it as `fast` is emptied. */
    PyObject *last_code;    /* not a reference: only compared */
    PyObject *last_fast;
} InstructionFilter;

/* `fast`'s entry for the code (borrowed), or NULL: with an error set on an error */
static PyObject *
fast_entry(InstructionFilter *self, PyObject *code)
{
    if (code == self->last_code && self->last_fast != NULL)
        return self->last_fast;
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL)
        return NULL;
    PyObject *fast = PyDict_GetItemWithError(self->fast, key);    /* borrowed */
    Py_DECREF(key);
    if (fast != NULL) {
        self->last_code = code;
        Py_XSETREF(self->last_fast, Py_NewRef(fast));
    }
    return fast;
}

/* 1: recorded, 0: the slow path, -1: an error */
static int
decide(InstructionFilter *self, PyObject *code, PyObject *offset)
{
    PyObject *fast = fast_entry(self, code);
    if (fast == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_Check(fast) || PyTuple_GET_SIZE(fast) != 5)
        return 0;       /* every instruction of this code goes to the engine now */
    Py_INCREF(fast);
    int decided = -1;
    int slow = PySequence_Contains(PyTuple_GET_ITEM(fast, 2), offset);
    if (slow != 0) {
        decided = slow < 0 ? -1 : 0;
        goto done;
    }
    int detached = attribute_true(self->sink, str_detached);
    if (detached != 0) {
        decided = detached < 0 ? -1 : 0;
        goto done;
    }
    PyFrameObject *frame = PyEval_GetFrame();   /* borrowed: the frame at the instruction */
    if (frame == NULL) {
        decided = 0;
        goto done;
    }
    PyCodeObject *running = PyFrame_GetCode(frame);
    int same = (PyObject *)running == code;
    Py_DECREF(running);
    if (!same) {
        decided = 0;
        goto done;
    }
    PyObject *record = PyTuple_GET_ITEM(fast, 0);
    if (record != Py_None) {
        if (record_instruction(record, (PyObject *)frame, PyTuple_GET_ITEM(fast, 1), self->lock,
                               PyTuple_GET_ITEM(fast, 3)) < 0)
            goto done;
    }
    else {
        /* Not recording: an armed offset whose condition may be false. */
        PyObject *check = PyDict_GetItemWithError(PyTuple_GET_ITEM(fast, 4), offset);
        if (check == NULL) {
            decided = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        Py_INCREF(check);
        int false_here = condition_is_false(check, frame, self->conditions, self->lock);
        Py_DECREF(check);
        if (false_here != 1) {
            decided = false_here;
            goto done;
        }
    }
    decided = count_event(self->events, str_instruction) < 0 ? -1 : 1;
done:
    Py_DECREF(fast);
    return decided;
}

static PyObject *
filter_call(InstructionFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    int decided = decide(self, args[0], args[1]);
    if (decided == 1)
        Py_RETURN_NONE;
    if (decided < 0)
        return hand_failure(self->fail);
    return PyObject_Vectorcall(self->slow, args, 2, NULL);
}

static int
filter_traverse(InstructionFilter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fast);
    Py_VISIT(self->conditions);
    Py_VISIT(self->lock);
    Py_VISIT(self->sink);
    Py_VISIT(self->events);
    Py_VISIT(self->fail);
    Py_VISIT(self->slow);
    Py_VISIT(self->last_fast);
    return 0;
}

static int
filter_clear(InstructionFilter *self)
{
    Py_CLEAR(self->fast);
    Py_CLEAR(self->conditions);
    Py_CLEAR(self->lock);
    Py_CLEAR(self->sink);
    Py_CLEAR(self->events);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->last_fast);
    return 0;
}

static void
filter_dealloc(InstructionFilter *self)
{
    PyObject_GC_UnTrack(self);
    filter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
filter_forget(InstructionFilter *self, PyObject *unused)
{
    self->last_code = NULL;
    Py_CLEAR(self->last_fast);
    Py_RETURN_NONE;
}

static PyMethodDef filter_methods[] = {
    {"forget", (PyCFunction)filter_forget, METH_NOARGS,
     "forget(): `fast` was emptied; the entry found last is gone with it"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject InstructionFilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine.tracing._monitoring.InstructionFilter",
    .tp_doc = "_on_instruction's filter while only recording (monitoring.py)",
    .tp_basicsize = sizeof(InstructionFilter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(InstructionFilter, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = (destructor)filter_dealloc,
    .tp_traverse = (traverseproc)filter_traverse,
    .tp_clear = (inquiry)filter_clear,
    .tp_methods = filter_methods,
};

static PyObject *
instruction_filter(PyObject *module, PyObject *args)
{
    PyObject *fast, *conditions, *lock, *sink, *events, *fail, *slow;
    if (!PyArg_ParseTuple(args, "O!OOOO!OO", &PyDict_Type, &fast, &conditions, &lock, &sink,
                          &PyDict_Type, &events, &fail, &slow))
        return NULL;
    InstructionFilter *self = PyObject_GC_New(InstructionFilter, &InstructionFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)filter_call;
    self->fast = Py_NewRef(fast);
    self->conditions = Py_NewRef(conditions);
    self->lock = Py_NewRef(lock);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->fail = Py_NewRef(fail);
    self->slow = Py_NewRef(slow);
    self->last_code = NULL;
    self->last_fast = NULL;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyMethodDef methods[] = {
    {"instruction_filter", instruction_filter, METH_VARARGS,
     "instruction_filter(fast, conditions, lock, engine, events, _fail, _on_instruction)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "dyndbg.engine.tracing._monitoring",
    "dyndbg's compiled INSTRUCTION callback for sys.monitoring (see monitoring.py).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__monitoring(void)
{
    str_detached = PyUnicode_InternFromString("detached");
    str_instruction = PyUnicode_InternFromString("instruction");
    if (str_detached == NULL || str_instruction == NULL || recording_init() < 0 ||
        PyType_Ready(&InstructionFilterType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
