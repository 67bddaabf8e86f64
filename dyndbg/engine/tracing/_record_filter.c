/* The RecordFilter (see _settrace.c): before _local_trace while the engine
 * only records, it records an instruction off the armed offsets with the
 * compiled History. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_fast_paths.h"
#include "_filters.h"
#include "_interned.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *record;       /* the compiled History's record (engine/recording/_history.c) */
    PyObject *spec;         /* what it needs of this frame's code: a history.RecordSpec */
    PyObject *armed;        /* offsets where a breakpoint may stop: the slow path */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *after;        /* History.after_record(result), for a result but RECORDED */
    PyObject *fail;         /* the tracer's _fail(error) */
    PyObject *slow;         /* _local_trace */
} RecordFilter;

/* DYNDBG_ANSWERED (recorded: None), DYNDBG_SLOW_PATH, or DYNDBG_ERROR */
static dyndbg_decision
record_decision(RecordFilter *self, PyFrameObject *frame, PyObject *event)
{
    if (!dyndbg_is_event(event, dyndbg_names.opcode))
        return DYNDBG_SLOW_PATH;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));      /* owned */
    if (lasti == NULL)
        return DYNDBG_ERROR;
    dyndbg_truth armed = PyDict_Contains(self->armed, lasti);
    Py_DECREF(lasti);
    if (armed != DYNDBG_FALSE)
        return armed == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    dyndbg_truth detached = dyndbg_attribute_true(self->sink, dyndbg_names.detached);
    if (detached != DYNDBG_FALSE)
        return detached == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    /* Under the engine lock, as every event that reaches the engine. */
    if (dyndbg_record_instruction(self->record, (PyObject *)frame, self->spec, self->lock,
                                  self->after) < 0)
        return DYNDBG_ERROR;
    return dyndbg_count_event(self->events, dyndbg_names.instruction) < 0
        ? DYNDBG_ERROR : DYNDBG_ANSWERED;
}

static PyObject *
record_filter_call(RecordFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    dyndbg_decision decided = record_decision(self, (PyFrameObject *)args[0], args[1]);
    if (decided == DYNDBG_ANSWERED)
        Py_RETURN_NONE;
    if (decided == DYNDBG_ERROR)
        return dyndbg_hand_failure(self->fail);     /* settrace.py's _fail */
    return PyObject_Vectorcall(self->slow, args, 3, NULL);
}

FILTER_TYPE(RecordFilter,
            Py_VISIT(self->record); Py_VISIT(self->spec); Py_VISIT(self->armed);
            Py_VISIT(self->lock); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->after); Py_VISIT(self->fail); Py_VISIT(self->slow);,
            Py_CLEAR(self->record); Py_CLEAR(self->spec); Py_CLEAR(self->armed);
            Py_CLEAR(self->lock); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->after); Py_CLEAR(self->fail); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(RecordFilter, "_local_trace's filter while only recording (settrace.py)")

PyObject *
dyndbg_record_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *record, *spec, *armed, *lock, *sink, *events, *after, *fail, *slow;  /* borrowed */
    if (!PyArg_ParseTuple(args, "OOO!OOO!OOO", &record, &spec, &PyDict_Type, &armed, &lock, &sink,
                          &PyDict_Type, &events, &after, &fail, &slow))
        return NULL;
    RecordFilter *self = PyObject_GC_New(RecordFilter, &DyndbgRecordFilter_Type);     /* owned */
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)record_filter_call;
    self->record = Py_NewRef(record);
    self->spec = Py_NewRef(spec);
    self->armed = Py_NewRef(armed);
    self->lock = Py_NewRef(lock);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->after = Py_NewRef(after);
    self->fail = Py_NewRef(fail);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
