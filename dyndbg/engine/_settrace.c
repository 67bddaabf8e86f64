/* Compiled trace functions for the sys.settrace mechanism (settrace.py).
 *
 * Each is a filter in front of a Python trace function of settrace.py: it
 * answers the events that need nothing (most of them) the way that function
 * would, and hands every other event to it. A Python trace function costs a
 * Python call per event; these cost a C call. The Python functions stay the
 * reference and the whole of the pure-Python core.
 *
 *   CallFilter    before _global_trace: a call of code that is not generated,
 *                 not a resume function, with no Ctrl-C pending: None, or
 *                 with --post-mortem, for a callee of generated code, the
 *                 CalleeFilter (f_trace_lines off). A frame of generated code
 *                 whose start _global_trace left to it (`starts`) is started
 *                 here: forgotten, counted, booked and armed with its
 *                 LineFilter.
 *   CalleeFilter  before _callee_trace: only an exception event reaches it.
 *   LineFilter    before a _line_tracer: an opcode event off the armed
 *                 offsets, a line event that only switches opcode events,
 *                 and an armed instruction whose breakpoint's condition is
 *                 false (evaluated here under the engine lock; the hit is
 *                 counted, and past the last armed one the frame released,
 *                 here too).
 *   RecordFilter  before _local_trace while the engine only records (`record
 *                 on`, continuing): an opcode event off the armed offsets is
 *                 recorded by the compiled History here, under the engine lock.
 *
 * Nothing here may raise past the interpreter's trace call: an error in a
 * filter is cleared and the event goes to the Python function, which
 * catches everything.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>

#include "_framebook.h"
#include "_recording.h"

static PyObject *str_detached, *str_call, *str_line, *str_opcode, *str_exception,
    *str_interrupt_pending, *str_failed_calls, *str_instruction, *str_stepping, *str_version,
    *str_start;

/* The event's name is one of the interpreter's interned strings. */
static int
is_event(PyObject *event, PyObject *name)
{
    return event == name || (PyUnicode_Check(event) && PyUnicode_Compare(event, name) == 0);
}

static PyObject *
hand_over(PyObject *slow, PyObject *const *args)
{
    PyErr_Clear();
    return PyObject_Vectorcall(slow, args, 3, NULL);
}

/* -- CalleeFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow;
} CalleeFilter;

static PyObject *
callee_call(CalleeFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (is_event(args[1], str_exception))
        return hand_over(self->slow, args);
    Py_RETURN_NONE;
}

/* -- CallFilter ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *generated;    /* registry.by_id: id(code) -> entry */
    PyObject *prefixes;     /* RESUME_PREFIXES */
    PyObject *hooks;        /* .interrupt_pending */
    PyObject *policy;       /* .failed_calls */
    PyObject *slow;         /* _global_trace */
    PyObject *callee;       /* the CalleeFilter */
    PyObject *starts;       /* id(code) -> (policy.version, LineFilter): starts done here */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    FrameBook *book;
} CallFilter;

static PyObject *fast_start(CallFilter *self, PyFrameObject *frame);

/* 1 if id(code) is a generated code's, 0 if not, -1 on an error */
static int
is_generated(PyObject *generated, PyCodeObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL)
        return -1;
    int found = PyDict_Contains(generated, key);
    Py_DECREF(key);
    return found;
}

/* None for a call nothing of dyndbg needs, the callee filter for a callee of
 * generated code under --post-mortem, NULL (no error set) for the slow path,
 * NULL with an error set on an error. */
static PyObject *
call_decision(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    int found = is_generated(self->generated, code);
    if (found == 0) {
        Py_ssize_t count = PyTuple_GET_SIZE(self->prefixes);
        for (Py_ssize_t i = 0; i < count && found == 0; i++)
            found = (int)PyUnicode_Tailmatch(code->co_name, PyTuple_GET_ITEM(self->prefixes, i),
                                             0, PY_SSIZE_T_MAX, -1);
    }
    Py_DECREF(code);
    if (found != 0)
        return NULL;
    int pending = attribute_true(self->hooks, str_interrupt_pending);
    if (pending != 0)
        return NULL;
    int failed_calls = attribute_true(self->policy, str_failed_calls);
    if (failed_calls < 0)
        return NULL;
    if (failed_calls) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        if (back != NULL) {
            PyCodeObject *caller = PyFrame_GetCode(back);
            Py_DECREF(back);
            found = is_generated(self->generated, caller);
            Py_DECREF(caller);
            if (found < 0)
                return NULL;
            if (found) {
                if (PyObject_SetAttr((PyObject *)frame, str_f_trace_lines, Py_False) < 0)
                    return NULL;
                return Py_NewRef(self->callee);
            }
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
call_filter_call(CallFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (!is_event(args[1], str_call))
        Py_RETURN_NONE;
    PyObject *decided = call_decision(self, (PyFrameObject *)args[0]);
    if (decided == NULL && !PyErr_Occurred())
        decided = fast_start(self, (PyFrameObject *)args[0]);
    return decided != NULL ? decided : hand_over(self->slow, args);
}

/* -- LineFilter ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *offsets;      /* plan.offsets: the armed instructions */
    PyObject *hot_lines;    /* plan.hot_lines */
    PyObject *line_of;      /* plan.line_of: offset -> line */
    int all_opcodes;        /* plan.all_opcodes */
    Py_ssize_t done_from;   /* plan.done_after: from this offset on (-1: never) */
    PyObject *checks;       /* offset -> ConditionCheck, evaluated here */
    PyObject *conditions;   /* the engine's Conditions */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    FrameBook *book;        /* to release the frame (the tracer's _release) */
    PyObject *events;       /* the tracer's Counter */
    PyObject *slow;         /* the plan's _line_tracer */
} LineFilter;

/* plan.all_opcodes or plan.line_of.get(lasti) in plan.hot_lines: 1, 0, or -1 */
static int
line_is_hot(LineFilter *self, PyObject *lasti)
{
    if (self->all_opcodes)
        return 1;
    PyObject *line = PyDict_GetItemWithError(self->line_of, lasti);   /* borrowed */
    if (line == NULL && PyErr_Occurred())
        return -1;
    return PySet_Contains(self->hot_lines, line ? line : Py_None);
}

/* An armed instruction: 1 if it has a ConditionCheck that is false here
 * (the hit counted; the frame released past its last armed instruction, as
 * the line tracer does after a dispatch), 0 for the slow path, -1 on an error. */
static int
false_condition(LineFilter *self, PyFrameObject *frame, PyObject *lasti)
{
    PyObject *check = PyDict_GetItemWithError(self->checks, lasti);     /* borrowed */
    if (check == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int detached = attribute_true(self->sink, str_detached);
    if (detached != 0)
        return detached < 0 ? -1 : 0;
    Py_INCREF(check);
    int false_here = condition_is_false(check, frame, self->conditions, self->lock);
    Py_DECREF(check);
    if (false_here != 1)
        return false_here;
    long offset = PyLong_AsLong(lasti);
    if (self->done_from >= 0 && offset >= self->done_from) {
        PyObject *trace = PyObject_GetAttr((PyObject *)frame, str_f_trace);
        int mine = trace == (PyObject *)self;
        Py_XDECREF(trace);
        if (trace == NULL)
            return -1;
        if (mine && book_release(self->book, (PyObject *)frame) < 0)
            return -1;
    }
    return 1;
}

/* 1: answered (None), 0: the slow path, -1: an error */
static int
line_decision(LineFilter *self, PyFrameObject *frame, PyObject *event)
{
    int opcode = is_event(event, str_opcode);
    if (!opcode && !is_event(event, str_line))
        return 0;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
    if (lasti == NULL)
        return -1;
    int armed = PySet_Contains(self->offsets, lasti);
    int answered = -1;
    if (armed < 0)
        goto done;
    if (opcode) {
        if (armed && (answered = false_condition(self, frame, lasti)) != 1)
            goto done;
        answered = count_event(self->events, str_instruction) < 0 ? -1 : 1;
        goto done;
    }
    int hot = line_is_hot(self, lasti);
    if (hot < 0)
        goto done;
    if (PyObject_SetAttr((PyObject *)frame, str_f_trace_opcodes, hot ? Py_True : Py_False) < 0)
        goto done;
    /* the opcode event for this instruction follows if hot; an armed one
     * that the line event reaches is handled here as its opcode */
    if (!hot && armed && (answered = false_condition(self, frame, lasti)) != 1)
        goto done;
    answered = count_event(self->events, str_line) < 0 ? -1 : 1;
done:
    Py_DECREF(lasti);
    return answered;
}

static PyObject *
line_filter_call(LineFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (line_decision(self, (PyFrameObject *)args[0], args[1]) == 1)
        Py_RETURN_NONE;
    return hand_over(self->slow, args);
}

/* -- a frame started by CallFilter -------------------------------------------------- */

static PyTypeObject LineFilterType;

/* As _global_trace starts a frame of generated code at TraceLevel.ARMED,
 * where `starts` holds the code's LineFilter for the policy's version (left
 * by _global_trace where the engine's start of its frames only forgets, as
 * Engine.start_only_forgets says), nothing is stepping, no Ctrl-C is
 * pending and the engine is attached: under the engine lock, what the
 * engine keeps by the frame's id forgotten, the start counted and the frame
 * booked; then armed. The LineFilter (a new reference); NULL with no error
 * set for the slow path, or with an error set. */
static PyObject *
fast_start(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *key = PyLong_FromVoidPtr(code);
    Py_DECREF(code);
    if (key == NULL)
        return NULL;
    PyObject *start = PyDict_GetItemWithError(self->starts, key);     /* borrowed */
    int generated = start ? PyDict_Contains(self->generated, key) : 0;
    Py_DECREF(key);
    if (generated <= 0 || !PyTuple_Check(start) || PyTuple_GET_SIZE(start) != 2 ||
        !Py_IS_TYPE(PyTuple_GET_ITEM(start, 1), &LineFilterType))
        return NULL;
    LineFilter *tracer = (LineFilter *)PyTuple_GET_ITEM(start, 1);
    if (attribute_true(self->hooks, str_interrupt_pending) != 0 ||
        attribute_true(self->policy, str_stepping) != 0 || attribute_true(self->sink, str_detached) != 0)
        return NULL;
    PyObject *version = PyObject_GetAttr(self->policy, str_version);
    int current = version ? PyObject_RichCompareBool(version, PyTuple_GET_ITEM(start, 0), Py_EQ) : -1;
    Py_XDECREF(version);
    if (current != 1)
        return NULL;
    Py_INCREF(tracer);
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
    int hot = lasti ? line_is_hot(tracer, lasti) : -1;
    Py_XDECREF(lasti);
    if (hot < 0 || lock_acquire(self->book->lock) < 0)
        goto fail;
    /* waits while dyndbg is stopped in another thread, which may detach */
    int detached = attribute_true(self->sink, str_detached);
    int booked = detached == 0 && book_forget(self->book, (PyObject *)frame) == 0 &&
                 count_event(self->events, str_start) == 0 &&
                 book_add(self->book, (PyObject *)frame) == 0;
    if (lock_release(self->book->lock) < 0 || !booked)
        goto fail;
    /* f_trace before f_trace_opcodes: 3.13 starts opcode events only so */
    if (PyObject_SetAttr((PyObject *)frame, str_f_trace, (PyObject *)tracer) < 0 ||
        PyObject_SetAttr((PyObject *)frame, str_f_trace_lines, Py_True) < 0 ||
        PyObject_SetAttr((PyObject *)frame, str_f_trace_opcodes, hot ? Py_True : Py_False) < 0) {
        book_drop(self->book, (PyObject *)frame);
        goto fail;
    }
    return (PyObject *)tracer;
fail:
    Py_DECREF(tracer);
    return NULL;
}

/* -- RecordFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *record;       /* the compiled History's record (engine/_history.c) */
    PyObject *spec;         /* what it needs of this frame's code */
    PyObject *armed;        /* offsets where a breakpoint may stop: the slow path */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *after;        /* History.after_record(result), for a result but RECORDED */
    PyObject *fail;         /* the tracer's _fail(error) */
    PyObject *slow;         /* _local_trace */
} RecordFilter;


/* 1: recorded (None), 0: the slow path, -1: an error */
static int
record_decision(RecordFilter *self, PyFrameObject *frame, PyObject *event)
{
    if (!is_event(event, str_opcode))
        return 0;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
    if (lasti == NULL)
        return -1;
    int armed = PyDict_Contains(self->armed, lasti);
    Py_DECREF(lasti);
    if (armed != 0)
        return armed < 0 ? -1 : 0;
    int detached = attribute_true(self->sink, str_detached);
    if (detached != 0)
        return detached < 0 ? -1 : 0;
    /* Under the engine lock, as every event that reaches the engine. */
    if (record_instruction(self->record, (PyObject *)frame, self->spec, self->lock,
                           self->after) < 0)
        return -1;
    return count_event(self->events, str_instruction) < 0 ? -1 : 1;
}

static PyObject *
record_filter_call(RecordFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    int decided = record_decision(self, (PyFrameObject *)args[0], args[1]);
    if (decided == 1)
        Py_RETURN_NONE;
    if (decided < 0)
        return hand_failure(self->fail);     /* settrace.py's _fail */
    return PyObject_Vectorcall(self->slow, args, 3, NULL);
}

/* -- the types ------------------------------------------------------------------------ */

#define FILTER_TYPE(Name, Fields, Traverse, Clear)                                          \
    static int Name##_traverse(Name *self, visitproc visit, void *arg) { Traverse return 0; } \
    static int Name##_clear(Name *self) { Clear return 0; }                                  \
    static void Name##_dealloc(Name *self)                                                   \
    {                                                                                        \
        PyObject_GC_UnTrack(self);                                                           \
        Name##_clear(self);                                                                  \
        Py_TYPE(self)->tp_free((PyObject *)self);                                            \
    }

FILTER_TYPE(CalleeFilter, , Py_VISIT(self->slow);, Py_CLEAR(self->slow);)
FILTER_TYPE(CallFilter, ,
            Py_VISIT(self->generated); Py_VISIT(self->prefixes); Py_VISIT(self->hooks);
            Py_VISIT(self->policy); Py_VISIT(self->slow); Py_VISIT(self->callee);
            Py_VISIT(self->starts); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->book);,
            Py_CLEAR(self->generated); Py_CLEAR(self->prefixes); Py_CLEAR(self->hooks);
            Py_CLEAR(self->policy); Py_CLEAR(self->slow); Py_CLEAR(self->callee);
            Py_CLEAR(self->starts); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->book);)
FILTER_TYPE(LineFilter, ,
            Py_VISIT(self->offsets); Py_VISIT(self->hot_lines); Py_VISIT(self->line_of);
            Py_VISIT(self->checks); Py_VISIT(self->conditions); Py_VISIT(self->lock);
            Py_VISIT(self->sink); Py_VISIT(self->book);
            Py_VISIT(self->events); Py_VISIT(self->slow);,
            Py_CLEAR(self->offsets); Py_CLEAR(self->hot_lines); Py_CLEAR(self->line_of);
            Py_CLEAR(self->checks); Py_CLEAR(self->conditions); Py_CLEAR(self->lock);
            Py_CLEAR(self->sink); Py_CLEAR(self->book);
            Py_CLEAR(self->events); Py_CLEAR(self->slow);)

FILTER_TYPE(RecordFilter, ,
            Py_VISIT(self->record); Py_VISIT(self->spec); Py_VISIT(self->armed);
            Py_VISIT(self->lock); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->after); Py_VISIT(self->fail); Py_VISIT(self->slow);,
            Py_CLEAR(self->record); Py_CLEAR(self->spec); Py_CLEAR(self->armed);
            Py_CLEAR(self->lock); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->after); Py_CLEAR(self->fail); Py_CLEAR(self->slow);)

static PyTypeObject CalleeFilterType, CallFilterType, RecordFilterType;

/* The filters' constructors, as module functions (their arguments checked). */
static PyObject *
callee_filter(PyObject *module, PyObject *slow)
{
    CalleeFilter *self = PyObject_GC_New(CalleeFilter, &CalleeFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)callee_call;
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
call_filter(PyObject *module, PyObject *args)
{
    PyObject *generated, *prefixes, *hooks, *policy, *slow, *callee, *starts, *sink, *events,
        *book;
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!OO!O!", &PyDict_Type, &generated, &PyTuple_Type,
                          &prefixes, &hooks, &policy, &slow, &callee, &PyDict_Type, &starts,
                          &sink, &PyDict_Type, &events, &FrameBookType, &book))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(prefixes, i)))
            return PyErr_Format(PyExc_TypeError, "call_filter: a prefix is not a str");
    CallFilter *self = PyObject_GC_New(CallFilter, &CallFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)call_filter_call;
    self->generated = Py_NewRef(generated);
    self->prefixes = Py_NewRef(prefixes);
    self->hooks = Py_NewRef(hooks);
    self->policy = Py_NewRef(policy);
    self->slow = Py_NewRef(slow);
    self->callee = Py_NewRef(callee);
    self->starts = Py_NewRef(starts);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->book = (FrameBook *)Py_NewRef(book);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
line_filter(PyObject *module, PyObject *args)
{
    PyObject *offsets, *hot_lines, *line_of, *checks, *conditions, *lock, *sink, *book,
        *events, *slow;
    int all_opcodes;
    Py_ssize_t done_from;
    if (!PyArg_ParseTuple(args, "OOO!pnO!OOOO!O!O", &offsets, &hot_lines, &PyDict_Type, &line_of,
                          &all_opcodes, &done_from, &PyDict_Type, &checks, &conditions, &lock,
                          &sink, &FrameBookType, &book, &PyDict_Type, &events, &slow))
        return NULL;
    if (!PyAnySet_Check(offsets) || !PyAnySet_Check(hot_lines))
        return PyErr_Format(PyExc_TypeError, "line_filter: offsets and hot_lines are sets");
    LineFilter *self = PyObject_GC_New(LineFilter, &LineFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)line_filter_call;
    self->offsets = Py_NewRef(offsets);
    self->hot_lines = Py_NewRef(hot_lines);
    self->line_of = Py_NewRef(line_of);
    self->all_opcodes = all_opcodes;
    self->done_from = done_from;
    self->checks = Py_NewRef(checks);
    self->conditions = Py_NewRef(conditions);
    self->lock = Py_NewRef(lock);
    self->sink = Py_NewRef(sink);
    self->book = (FrameBook *)Py_NewRef(book);
    self->events = Py_NewRef(events);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
record_filter(PyObject *module, PyObject *args)
{
    PyObject *record, *spec, *armed, *lock, *sink, *events, *after, *fail, *slow;
    if (!PyArg_ParseTuple(args, "OOO!OOO!OOO", &record, &spec, &PyDict_Type, &armed, &lock, &sink,
                          &PyDict_Type, &events, &after, &fail, &slow))
        return NULL;
    RecordFilter *self = PyObject_GC_New(RecordFilter, &RecordFilterType);
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

#define FILTER_TYPE_OBJECT(Name, Doc)                                                        \
    static PyTypeObject Name##Type = {                                                       \
        PyVarObject_HEAD_INIT(NULL, 0)                                                       \
        .tp_name = "dyndbg.engine._settrace." #Name,                                         \
        .tp_doc = Doc,                                                                       \
        .tp_basicsize = sizeof(Name),                                                        \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,    \
        .tp_vectorcall_offset = offsetof(Name, vectorcall),                                  \
        .tp_call = PyVectorcall_Call,                                                        \
        .tp_dealloc = (destructor)Name##_dealloc,                                            \
        .tp_traverse = (traverseproc)Name##_traverse,                                        \
        .tp_clear = (inquiry)Name##_clear,                                                   \
    };

FILTER_TYPE_OBJECT(CalleeFilter, "_callee_trace's filter (settrace.py)")
FILTER_TYPE_OBJECT(CallFilter, "_global_trace's filter (settrace.py)")
FILTER_TYPE_OBJECT(LineFilter, "a _line_tracer's filter (settrace.py)")
FILTER_TYPE_OBJECT(RecordFilter, "_local_trace's filter while only recording (settrace.py)")

static PyMethodDef methods[] = {
    {"frame_book", frame_book, METH_VARARGS, "frame_book(active, thread, keyed, hooks, lock)"},
    {"callee_filter", callee_filter, METH_O, "callee_filter(_callee_trace)"},
    {"call_filter", call_filter, METH_VARARGS,
     "call_filter(generated, prefixes, hooks, policy, _global_trace, callee_filter, starts, "
     "engine, events, frame_book)"},
    {"line_filter", line_filter, METH_VARARGS,
     "line_filter(offsets, hot_lines, line_of, all_opcodes, done_from, checks, conditions, "
     "lock, engine, frame_book, events, line_tracer)"},
    {"record_filter", record_filter, METH_VARARGS,
     "record_filter(record, spec, armed, lock, engine, events, after_record, _fail, "
     "_local_trace)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "dyndbg.engine._settrace",
    "dyndbg's compiled trace functions for sys.settrace (see settrace.py).", -1, methods,
};

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__settrace(void)
{
    if (intern(&str_call, "call") || intern(&str_line, "line") || intern(&str_opcode, "opcode") ||
        intern(&str_exception, "exception") ||
        intern(&str_interrupt_pending, "interrupt_pending") ||
        intern(&str_failed_calls, "failed_calls") || intern(&str_instruction, "instruction") ||
        intern(&str_detached, "detached") || intern(&str_stepping, "stepping") ||
        intern(&str_version, "version") || intern(&str_start, "start") ||
        recording_init() < 0 || framebook_init() < 0)
        return NULL;
    if (PyType_Ready(&CalleeFilterType) < 0 || PyType_Ready(&CallFilterType) < 0 ||
        PyType_Ready(&LineFilterType) < 0 || PyType_Ready(&RecordFilterType) < 0 ||
        PyType_Ready(&FrameBookType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddObjectRef(m, "RecordFilterType", (PyObject *)&RecordFilterType) < 0 ||
                      PyModule_AddObjectRef(m, "LineFilterType", (PyObject *)&LineFilterType) < 0))
        Py_CLEAR(m);
    return m;
}
