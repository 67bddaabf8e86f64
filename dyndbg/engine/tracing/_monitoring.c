/* The compiled INSTRUCTION callback of the sys.monitoring mechanism
 * (monitoring.py, Python 3.12+).
 *
 * A filter in front of MonitoringTracer._on_instruction for the codes listed
 * in `fast` (id(code) -> a fast_paths.FastInstructions: record, spec, slow
 * offsets, after, checks; or () where every instruction goes on), filled
 * by _on_instruction and emptied by monitoring.py (then forget()) whenever
 * the engine's mode or breakpoints change. While the engine only records
 * (`record on`, continuing, no trace), an instruction is recorded here by
 * the compiled History, in the frame running it; while it does not record,
 * an armed offset with a ConditionCheck has its condition evaluated here,
 * and a false one only counts the hit. Both under the engine lock. Everything else, and
 * every listed slow offset (an armed breakpoint while recording, a 3.12
 * resume call site), goes to _on_instruction. A failure goes to _fail.
 * The return codes are cpython/_capi.h's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>

#include "../../cpython/_attributes.h"
#include "../../cpython/_capi.h"
#include "_fast_paths.h"

/* The fields of a fast_paths.FastInstructions, `fast`'s value for a code,
 * read by index (tests/test_c_boundary_unit.py pins them to its _fields). */
enum FastInstructionsField {
    FAST_INSTRUCTIONS_RECORD = 0,
    FAST_INSTRUCTIONS_SPEC = 1,
    FAST_INSTRUCTIONS_SLOW = 2,
    FAST_INSTRUCTIONS_AFTER = 3,
    FAST_INSTRUCTIONS_CHECKS = 4,
    FAST_INSTRUCTIONS_FIELDS = 5,
};

static PyObject *str_detached, *str_instruction;    /* interned, owned for the process */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fast;         /* id(code) -> FastInstructions, or () */
    PyObject *conditions;   /* the engine's Conditions */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *fail;         /* the tracer's _fail(error) */
    PyObject *slow;         /* _on_instruction(code, offset) */
    /* The entry of `fast` found last, for the code it is of: a code's
     * instructions run in a row, and the look-up by id costs more than the
     * rest of the decision. forget() drops it as `fast` is emptied. */
    PyObject *last_code;    /* not a reference (neither owned nor borrowed): only compared */
    PyObject *last_fast;    /* owned */
} InstructionFilter;

/* `fast`'s entry for the code (borrowed), or NULL: with an error set on an error */
static PyObject *
fast_entry(InstructionFilter *self, PyObject *code)
{
    if (code == self->last_code && self->last_fast != NULL)
        return self->last_fast;
    PyObject *key = PyLong_FromVoidPtr(code);     /* owned */
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

/* DYNDBG_ANSWERED (recorded, or a false condition's hit counted),
 * DYNDBG_SLOW_PATH, or DYNDBG_ERROR */
static dyndbg_decision
decide(InstructionFilter *self, PyObject *code, PyObject *offset)
{
    PyObject *fast = fast_entry(self, code);    /* borrowed */
    if (fast == NULL)
        return PyErr_Occurred() ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    if (!PyTuple_Check(fast) || PyTuple_GET_SIZE(fast) != FAST_INSTRUCTIONS_FIELDS)
        return DYNDBG_SLOW_PATH;    /* every instruction of this code goes to the engine now */
    Py_INCREF(fast);        /* owned from here */
    dyndbg_decision decided = DYNDBG_ERROR;
    dyndbg_truth slow =
        PySequence_Contains(PyTuple_GET_ITEM(fast, FAST_INSTRUCTIONS_SLOW), offset);
    if (slow != DYNDBG_FALSE) {
        decided = slow == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
        goto done;
    }
    dyndbg_truth detached = dyndbg_attribute_true(self->sink, str_detached);
    if (detached != DYNDBG_FALSE) {
        decided = detached == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
        goto done;
    }
    PyFrameObject *frame = PyEval_GetFrame();   /* borrowed: the frame at the instruction */
    if (frame == NULL) {
        decided = DYNDBG_SLOW_PATH;
        goto done;
    }
    PyCodeObject *running = PyFrame_GetCode(frame);     /* owned */
    int same = (PyObject *)running == code;
    Py_DECREF(running);
    if (!same) {
        decided = DYNDBG_SLOW_PATH;
        goto done;
    }
    PyObject *record = PyTuple_GET_ITEM(fast, FAST_INSTRUCTIONS_RECORD);     /* borrowed */
    if (record != Py_None) {
        if (dyndbg_record_instruction(record, (PyObject *)frame,
                                      PyTuple_GET_ITEM(fast, FAST_INSTRUCTIONS_SPEC), self->lock,
                                      PyTuple_GET_ITEM(fast, FAST_INSTRUCTIONS_AFTER)) < 0)
            goto done;
    }
    else {
        /* Not recording: an armed offset whose condition may be false. */
        PyObject *check = PyDict_GetItemWithError(
            PyTuple_GET_ITEM(fast, FAST_INSTRUCTIONS_CHECKS), offset);     /* borrowed */
        if (check == NULL) {
            decided = PyErr_Occurred() ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
            goto done;
        }
        Py_INCREF(check);       /* owned while the condition runs */
        dyndbg_decision false_here =
            dyndbg_condition_is_false(check, frame, self->conditions, self->lock);
        Py_DECREF(check);
        if (false_here != DYNDBG_ANSWERED) {
            decided = false_here;
            goto done;
        }
    }
    decided = dyndbg_count_event(self->events, str_instruction) < 0
        ? DYNDBG_ERROR : DYNDBG_ANSWERED;
done:
    Py_DECREF(fast);
    return decided;
}

static PyObject *
filter_call(InstructionFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    dyndbg_decision decided = decide(self, args[0], args[1]);
    if (decided == DYNDBG_ANSWERED)
        Py_RETURN_NONE;
    if (decided == DYNDBG_ERROR)
        return dyndbg_hand_failure(self->fail);
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
filter_forget(InstructionFilter *self, PyObject *Py_UNUSED(unused))
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
instruction_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *fast, *conditions, *lock, *sink, *events, *fail, *slow;     /* borrowed */
    if (!PyArg_ParseTuple(args, "O!OOOO!OO", &PyDict_Type, &fast, &conditions, &lock, &sink,
                          &PyDict_Type, &events, &fail, &slow))
        return NULL;
    InstructionFilter *self = PyObject_GC_New(InstructionFilter, &InstructionFilterType);  /* owned */
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
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "dyndbg.engine.tracing._monitoring",
    .m_doc = "dyndbg's compiled INSTRUCTION callback for sys.monitoring (see monitoring.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__monitoring(void)
{
    if (dyndbg_intern(&str_detached, "detached") < 0 ||
        dyndbg_intern(&str_instruction, "instruction") < 0 || dyndbg_fast_paths_init() < 0 ||
        PyType_Ready(&InstructionFilterType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
