/* The C half of engine/fast_paths.py (_fast_paths.h says what each
 * function answers), compiled into both tracing extensions. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "_fast_paths.h"

/* Attribute and method names, interned once (dyndbg_fast_paths_init). */
static PyObject *name_acquire, *name_release, *name_enabled, *name_condition, *name_hits,
    *name_running, *name_outcome, *name_outcome_type;

dyndbg_status
dyndbg_fast_paths_init(void)
{
    return dyndbg_intern(&name_acquire, "acquire") || dyndbg_intern(&name_release, "release") ||
           dyndbg_intern(&name_enabled, "enabled") ||
           dyndbg_intern(&name_condition, "condition") || dyndbg_intern(&name_hits, "hits") ||
           dyndbg_intern(&name_running, "running") || dyndbg_intern(&name_outcome, "outcome") ||
           dyndbg_intern(&name_outcome_type, "Outcome") ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_status
dyndbg_lock_acquire(PyObject *lock)
{
    PyObject *held = PyObject_CallMethodNoArgs(lock, name_acquire);    /* owned */
    Py_XDECREF(held);
    return held == NULL ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_status
dyndbg_lock_release(PyObject *lock)
{
    PyObject *earlier = dyndbg_error_take();        /* owned */
    PyObject *released = PyObject_CallMethodNoArgs(lock, name_release);    /* owned */
    Py_XDECREF(released);
    if (earlier != NULL) {
        dyndbg_error_restore(earlier);      /* over the release's own error, if any */
        return DYNDBG_ERROR;
    }
    return released == NULL ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_status
dyndbg_count_event(PyObject *events, PyObject *kind)
{
    PyObject *now = PyDict_GetItemWithError(events, kind);     /* borrowed */
    if (now == NULL && PyErr_Occurred())
        return DYNDBG_ERROR;
    PyObject *next = PyLong_FromLong(now ? PyLong_AsLong(now) + 1 : 1);    /* owned */
    if (next == NULL)
        return DYNDBG_ERROR;
    int failed = PyDict_SetItem(events, kind, next);
    Py_DECREF(next);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_status
dyndbg_record_instruction(PyObject *record, PyObject *frame, PyObject *spec, PyObject *lock,
                          PyObject *after)
{
    if (dyndbg_lock_acquire(lock) < 0)
        return DYNDBG_ERROR;
    PyObject *args[] = {frame, spec};
    PyObject *result = PyObject_Vectorcall(record, args, 2, NULL);     /* owned */
    if (result != NULL && PyLong_Check(result) &&
        PyLong_AsLong(result) != RECORD_RESULT_RECORDED) {
        PyObject *done = PyObject_CallOneArg(after, result);       /* owned */
        Py_XDECREF(done);
        if (done == NULL)
            Py_CLEAR(result);
    }
    int failed = result == NULL;
    Py_XDECREF(result);
    return dyndbg_lock_release(lock) < 0 || failed ? DYNDBG_ERROR : DYNDBG_OK;
}

PyObject *
dyndbg_hand_failure(PyObject *fail)
{
    PyObject *error = dyndbg_error_take();      /* owned */
    PyObject *handled = PyObject_CallOneArg(fail, error ? error : Py_None);    /* owned */
    Py_XDECREF(error);
    return handled;
}

/* Conditions.evaluate's Outcome (frame id, lasti, expression, error or None)
 * for hit(), which takes it instead of evaluating the condition again:
 * set as conditions.outcome. */
static dyndbg_status
leave_outcome(PyObject *conditions, PyFrameObject *frame, PyObject *expression, PyObject *error)
{
    PyObject *outcome_type = PyObject_GetAttr(conditions, name_outcome_type);     /* owned */
    if (outcome_type == NULL)
        return DYNDBG_ERROR;
    PyObject *fields = PyTuple_New(OUTCOME_FIELDS);     /* owned */
    PyObject *frame_id = fields ? PyLong_FromVoidPtr(frame) : NULL;             /* owned */
    PyObject *lasti = frame_id ? PyLong_FromLong(PyFrame_GetLasti(frame)) : NULL;  /* owned */
    if (lasti != NULL) {
        PyTuple_SET_ITEM(fields, OUTCOME_FRAME_ID, frame_id);   /* the tuple owns them now */
        PyTuple_SET_ITEM(fields, OUTCOME_LASTI, lasti);
        PyTuple_SET_ITEM(fields, OUTCOME_EXPRESSION, Py_NewRef(expression));
        PyTuple_SET_ITEM(fields, OUTCOME_ERROR, Py_NewRef(error ? error : Py_None));
    }
    else {
        Py_XDECREF(frame_id);
        Py_CLEAR(fields);
    }
    PyObject *args = fields ? PyTuple_Pack(1, fields) : NULL;      /* owned */
    /* tuple.__new__(Outcome, fields): no Python frame (dynamo sees every one) */
    PyObject *outcome = args ? PyTuple_Type.tp_new((PyTypeObject *)outcome_type, args, NULL)
                             : NULL;      /* owned */
    Py_DECREF(outcome_type);
    Py_XDECREF(fields);
    Py_XDECREF(args);
    if (outcome == NULL)
        return DYNDBG_ERROR;
    int failed = PyObject_SetAttr(conditions, name_outcome, outcome);
    Py_DECREF(outcome);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_decision
dyndbg_condition_is_false(PyObject *check, PyFrameObject *frame, PyObject *conditions,
                          PyObject *lock)
{
    if (!PyTuple_Check(check) || PyTuple_GET_SIZE(check) != CONDITION_CHECK_FIELDS)
        return DYNDBG_SLOW_PATH;
    PyObject *bp = PyTuple_GET_ITEM(check, CONDITION_CHECK_BREAKPOINT),       /* borrowed */
             *location = PyTuple_GET_ITEM(check, CONDITION_CHECK_LOCATION),
             *expression = PyTuple_GET_ITEM(check, CONDITION_CHECK_EXPRESSION),
             *code = PyTuple_GET_ITEM(check, CONDITION_CHECK_CODE);
    if (dyndbg_lock_acquire(lock) < 0)
        return DYNDBG_ERROR;
    dyndbg_truth ready = dyndbg_attribute_true(bp, name_enabled);
    if (ready == DYNDBG_TRUE && location != Py_None)
        ready = dyndbg_attribute_true(location, name_enabled);
    if (ready == DYNDBG_TRUE)
        ready = dyndbg_attribute_is(bp, name_condition, expression);
    if (ready != DYNDBG_TRUE)   /* changed since: the slow path (or an error) */
        return dyndbg_lock_release(lock) < 0 ? DYNDBG_ERROR
               : ready == DYNDBG_FALSE ? DYNDBG_SLOW_PATH : DYNDBG_ERROR;
    PyObject *globals = PyFrame_GetGlobals(frame);     /* owned */
    PyObject *locals = PyFrame_GetLocals(frame);       /* owned */
    dyndbg_truth truth = DYNDBG_ERROR;
    if (globals != NULL && locals != NULL &&
        PyObject_SetAttr(conditions, name_running, Py_True) == 0) {
        PyObject *value = PyEval_EvalCode(code, globals, locals);     /* owned */
        truth = value == NULL ? DYNDBG_ERROR : PyObject_IsTrue(value);
        Py_XDECREF(value);
    }
    Py_XDECREF(globals);
    Py_XDECREF(locals);
    PyObject *error = truth == DYNDBG_ERROR ? dyndbg_error_take() : NULL;     /* owned */
    dyndbg_status done = PyObject_SetAttr(conditions, name_running, Py_False) == 0
                             ? DYNDBG_OK : DYNDBG_ERROR;
    if (done == DYNDBG_OK && truth == DYNDBG_FALSE) {
        done = dyndbg_attribute_add(bp, name_hits, 1);
        if (done == DYNDBG_OK && location != Py_None)
            done = dyndbg_attribute_add(location, name_hits, 1);
    }
    else if (done == DYNDBG_OK)
        done = leave_outcome(conditions, frame, expression, error);
    Py_XDECREF(error);
    if (dyndbg_lock_release(lock) < 0 || done < 0)
        return DYNDBG_ERROR;
    return truth == DYNDBG_FALSE ? DYNDBG_ANSWERED : DYNDBG_SLOW_PATH;
}
