/* What the compiled tracing mechanisms (_settrace.c, _monitoring.c) share:
 * recording one instruction with the compiled History (engine/recording/_history.c)
 * under the engine lock, evaluating a breakpoint's condition where only a
 * hit is counted when it is false, and handing a failure to the mechanism's
 * _fail. */
#ifndef DYNDBG_FAST_PATHS_H
#define DYNDBG_FAST_PATHS_H

#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"

/* Attribute and method names, interned once (recording_init). */
static PyObject *name_acquire, *name_release, *name_enabled, *name_condition, *name_hits,
    *name_running, *name_outcome, *name_outcome_type;

static int
recording_init(void)
{
    return !(name_acquire = PyUnicode_InternFromString("acquire")) ||
           !(name_release = PyUnicode_InternFromString("release")) ||
           !(name_enabled = PyUnicode_InternFromString("enabled")) ||
           !(name_condition = PyUnicode_InternFromString("condition")) ||
           !(name_hits = PyUnicode_InternFromString("hits")) ||
           !(name_running = PyUnicode_InternFromString("running")) ||
           !(name_outcome = PyUnicode_InternFromString("outcome")) ||
           !(name_outcome_type = PyUnicode_InternFromString("Outcome")) ? -1 : 0;
}

/* lock.acquire(); 0, or -1 with an error set */
static int
lock_acquire(PyObject *lock)
{
    PyObject *held = PyObject_CallMethodNoArgs(lock, name_acquire);
    Py_XDECREF(held);
    return held == NULL ? -1 : 0;
}

/* lock.release(), keeping an error already set (the lock is released after
 * an error too); 0, or -1 with an error set (the earlier one first) */
static int
lock_release(PyObject *lock)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *released = PyObject_CallMethodNoArgs(lock, name_release);
    Py_XDECREF(released);
    if (type != NULL) {
        PyErr_Restore(type, value, tb);
        return -1;
    }
    return released == NULL ? -1 : 0;
}

/* events[kind] += 1 on the mechanism's Counter */
static int
count_event(PyObject *events, PyObject *kind)
{
    PyObject *now = PyDict_GetItemWithError(events, kind);     /* borrowed */
    if (now == NULL && PyErr_Occurred())
        return -1;
    PyObject *next = PyLong_FromLong(now ? PyLong_AsLong(now) + 1 : 1);
    if (next == NULL)
        return -1;
    int failed = PyDict_SetItem(events, kind, next);
    Py_DECREF(next);
    return failed;
}

/* record(frame, spec) under lock; after(result) for a result other than
 * RECORDED (0). 0, or -1 with an error set (the lock released either way). */
static int
record_instruction(PyObject *record, PyObject *frame, PyObject *spec, PyObject *lock,
                   PyObject *after)
{
    if (lock_acquire(lock) < 0)
        return -1;
    PyObject *args[] = {frame, spec};
    PyObject *result = PyObject_Vectorcall(record, args, 2, NULL);
    if (result != NULL && PyLong_Check(result) && PyLong_AsLong(result) != 0) {
        PyObject *done = PyObject_CallOneArg(after, result);
        Py_XDECREF(done);
        if (done == NULL)
            Py_CLEAR(result);
    }
    int failed = result == NULL;
    Py_XDECREF(result);
    return lock_release(lock) < 0 || failed ? -1 : 0;
}

/* The mechanism's _fail(error) with the error set now: control flow (a
 * Ctrl-C) goes on into the program, as from its Python callbacks (NULL
 * returned, the error set); any other error is the engine's, said once, and
 * it detaches (None returned). */
static PyObject *
hand_failure(PyObject *fail)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *handled = PyObject_CallOneArg(fail, value ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return handled;
}

/* Conditions.evaluate's Outcome (frame id, lasti, expression, error or None)
 * for hit(), which takes it instead of evaluating the condition again. */
static int
leave_outcome(PyObject *conditions, PyFrameObject *frame, PyObject *expression, PyObject *error)
{
    PyObject *outcome_type = PyObject_GetAttr(conditions, name_outcome_type);
    if (outcome_type == NULL)
        return -1;
    PyObject *fields = Py_BuildValue("(NiOO)", PyLong_FromVoidPtr(frame), PyFrame_GetLasti(frame),
                                     expression, error ? error : Py_None);
    PyObject *args = fields ? PyTuple_Pack(1, fields) : NULL;
    /* tuple.__new__(Outcome, fields): no Python frame (dynamo sees every one) */
    PyObject *outcome = args ? PyTuple_Type.tp_new((PyTypeObject *)outcome_type, args, NULL) : NULL;
    Py_DECREF(outcome_type);
    Py_XDECREF(fields);
    Py_XDECREF(args);
    if (outcome == NULL)
        return -1;
    int failed = PyObject_SetAttr(conditions, name_outcome, outcome);
    Py_DECREF(outcome);
    return failed;
}

/* A breakpoints.ConditionCheck (breakpoint, location, expression, code) at
 * the frame's instruction, evaluated as Conditions.evaluate does (its
 * `running` set meanwhile), under the engine lock. 1: false, the hits
 * counted as hit() counts them; 0: the slow path (the breakpoint changed
 * since, or the condition was true or raised: its Outcome left for hit());
 * -1: an error. */
static int
condition_is_false(PyObject *check, PyFrameObject *frame, PyObject *conditions, PyObject *lock)
{
    if (!PyTuple_Check(check) || PyTuple_GET_SIZE(check) != 4)
        return 0;
    PyObject *bp = PyTuple_GET_ITEM(check, 0), *location = PyTuple_GET_ITEM(check, 1),
             *expression = PyTuple_GET_ITEM(check, 2), *code = PyTuple_GET_ITEM(check, 3);
    if (lock_acquire(lock) < 0)
        return -1;
    int ready = attribute_true(bp, name_enabled);
    if (ready == 1 && location != Py_None)
        ready = attribute_true(location, name_enabled);
    if (ready == 1)
        ready = attribute_is(bp, name_condition, expression);
    if (ready != 1)
        return lock_release(lock) < 0 ? -1 : ready;
    PyObject *globals = PyFrame_GetGlobals(frame);
    PyObject *locals = PyFrame_GetLocals(frame);
    int truth = -1;
    if (globals != NULL && locals != NULL &&
        PyObject_SetAttr(conditions, name_running, Py_True) == 0) {
        PyObject *value = PyEval_EvalCode(code, globals, locals);
        truth = value == NULL ? -1 : PyObject_IsTrue(value);
        Py_XDECREF(value);
    }
    Py_XDECREF(globals);
    Py_XDECREF(locals);
    PyObject *type = NULL, *error = NULL, *tb = NULL;
    if (truth < 0) {
        PyErr_Fetch(&type, &error, &tb);
        PyErr_NormalizeException(&type, &error, &tb);
        if (error != NULL && tb != NULL)
            PyException_SetTraceback(error, tb);
    }
    int done = PyObject_SetAttr(conditions, name_running, Py_False);
    if (done == 0 && truth == 0) {
        done = attribute_add(bp, name_hits, 1);
        if (done == 0 && location != Py_None)
            done = attribute_add(location, name_hits, 1);
    }
    else if (done == 0)
        done = leave_outcome(conditions, frame, expression, error);
    Py_XDECREF(type);
    Py_XDECREF(error);
    Py_XDECREF(tb);
    if (lock_release(lock) < 0 || done < 0)
        return -1;
    return truth == 0 ? 1 : 0;
}

#endif
