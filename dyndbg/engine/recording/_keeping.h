/* Keeping values as recorded_values.py keeps them, in C: what is kept of
 * a new value (keep_value: values kept as they are, a tensor whose latest
 * copy still holds, small lists and tuples of those; everything else, a new
 * tensor copy included, through the Python ValueKeeper.keep), and a
 * frame's slots kept from the sources slot_sources found (keep_all; the
 * tokens' checks are _tokens.h). recorded_values.py is the reference;
 * tests/test_cores_unit.py compares the two. Included by _history.c alone. */
#ifndef DYNDBG_KEEPING_H
#define DYNDBG_KEEPING_H

#include <Python.h>

#include "_tokens.h"

static void
untrack(PyObject *object)
{
    if (PyObject_GC_IsTracked(object))
        PyObject_GC_UnTrack(object);
}

/* _Items(items, tokens), set as its __init__ sets it, without running it:
 * a Python frame started here also goes through dynamo's frame callback,
 * which costs more than the rest of the record. */
static PyObject *
new_items_token(const Keeping *self, PyObject *items, PyObject *tokens)
{
    PyTypeObject *type = (PyTypeObject *)self->items_type;
    PyObject *token = type->tp_alloc(type, 0);
    if (token == NULL)
        return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) {
        Py_DECREF(token);
        return NULL;
    }
    field_set(token, self->items_items, items);
    field_set(token, self->items_tokens, tokens);
    field_set(token, self->items_last, zero);
    Py_DECREF(zero);
    return token;
}

static int known_copy(const Keeping *self, PyObject *tensor, PyObject *seq, PyObject **kept,
                      PyObject **token);
static int keep_container(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
                          PyObject **kept, PyObject **token, int *anew);

/* ValueKeeper.keep(value, seq, depth) into *kept and *token (new
 * references): the cases that need no new copy in C (a value kept as it is,
 * a tensor whose latest copy still holds, a small list or tuple of such), the
 * others through the Python keep(), which then sets *anew. 0, or -1 on an
 * error. recorded_values.py is the reference. */
static int
keep_value(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth, PyObject **kept,
           PyObject **token, int *anew)
{
    PyObject *kind = (PyObject *)Py_TYPE(value);
    int found = PySet_Contains(self->as_is, kind);
    if (found != 0) {
        if (found < 0)
            return -1;
        *kept = Py_NewRef(value);
        *token = Py_NewRef(Py_None);
        return 0;
    }
    if (PySlice_Check(value)) {     /* of values kept as they are: itself, as keep() */
        PySliceObject *parts = (PySliceObject *)value;
        found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->start));
        if (found == 1)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->stop));
        if (found == 1)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->step));
        if (found < 0)
            return -1;
        if (found) {
            *kept = Py_NewRef(value);
            *token = Py_NewRef(Py_None);
            return 0;
        }
    }
    if (self->tensor_types != NULL) {
        found = PySet_Contains(self->tensor_types, kind);
        if (found < 0)
            return -1;
        if (found) {
            int known = known_copy(self, value, seq, kept, token);
            if (known != 0)
                return known < 0 ? -1 : 0;
        }
        else if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) &&
                 depth < self->container_depth && Py_SIZE(value) <= self->container_items)
            return keep_container(self, value, seq, depth, kept, token, anew);
    }
    *anew = 1;
    PyObject *depth_object = PyLong_FromSsize_t(depth);
    if (depth_object == NULL)
        return -1;
    PyObject *pair = PyObject_CallFunctionObjArgs(self->keep, value, seq, depth_object, NULL);
    Py_DECREF(depth_object);
    if (pair == NULL || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        if (pair != NULL)
            PyErr_SetString(PyExc_TypeError, "history: keep() gave no pair");
        Py_XDECREF(pair);
        return -1;
    }
    *kept = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
    *token = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    return 0;
}

/* ValueKeeper._tensor's first case: the tensor's latest copy is of this
 * tensor (its weak reference) and of its version now: that copy, its
 * `last` set to seq. 1 when so, 0 when keep() must decide, -1 on an error. */
static int
known_copy(const Keeping *self, PyObject *tensor, PyObject *seq, PyObject **kept, PyObject **token)
{
    PyObject *key = PyLong_FromVoidPtr(tensor);
    if (key == NULL)
        return -1;
    PyObject *known = Py_XNewRef(PyDict_GetItemWithError(self->copies, key));
    Py_DECREF(key);
    if (known == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if ((PyObject *)Py_TYPE(known) != self->copy_type) {
        Py_DECREF(known);
        return 0;
    }
    int holds = -1;
    PyObject *ref = Py_XNewRef(field_get(known, self->copy_ref));
    PyObject *target = ref ? PyObject_CallNoArgs(ref) : NULL;
    if (target != NULL) {
        holds = target == tensor;
        if (holds)     /* _Copy.holds: a version, the tensor's own now */
            holds = token_holds(self, known, tensor, seq);
        if (holds == 1) {
            *kept = Py_XNewRef(field_get(known, self->copy_tensor));
            *token = Py_NewRef(known);
            if (*kept == NULL) {
                Py_CLEAR(*token);
                holds = -1;
            }
        }
    }
    if (holds < 0 && PyErr_ExceptionMatches(PyExc_RuntimeError)) {
        PyErr_Clear();     /* an inference tensor has no _version: keep() copies it */
        holds = 0;
    }
    Py_XDECREF(ref);
    Py_XDECREF(target);
    Py_DECREF(known);
    return holds;
}

/* ValueKeeper._container for a list or tuple within the bounds: a new one
 * of kept items (a tuple of values kept as they are: itself), its token an
 * _Items of the items and their tokens, or VOLATILE if one is. */
static int
keep_container(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
               PyObject **kept, PyObject **token, int *anew)
{
    PyObject *items = PySequence_Tuple(value);
    if (items == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *kept_items = PyList_New(n), *tokens = PyList_New(n);
    int failed = kept_items == NULL || tokens == NULL, any_token = 0, same = 1, stable = 1;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i), *kept_item, *item_token;
        if (keep_value(self, item, seq, depth + 1, &kept_item, &item_token, anew) < 0) {
            failed = 1;
            break;
        }
        any_token |= item_token != Py_None;
        same &= kept_item == item;
        stable &= item_token != self->volatile_token;
        PyList_SET_ITEM(kept_items, i, kept_item);
        PyList_SET_ITEM(tokens, i, item_token);
    }
    if (!failed) {
        if (PyTuple_CheckExact(value) && !any_token && same) {
            *kept = Py_NewRef(value);           /* immutable all the way down */
            *token = Py_NewRef(Py_None);
        }
        else {
            *kept = PyTuple_CheckExact(value) ? PyList_AsTuple(kept_items)
                                              : Py_NewRef(kept_items);
            *token = *kept == NULL ? NULL
                : stable ? new_items_token(self, items, tokens)
                         : Py_NewRef(self->volatile_token);
            if (*token == NULL) {
                Py_CLEAR(*kept);
                failed = 1;
            }
            else
                untrack(*kept);
        }
    }
    Py_DECREF(items);
    Py_XDECREF(kept_items);
    Py_XDECREF(tokens);
    return failed ? -1 : 0;
}

/* ValueKeeper.keep_all with the sources found: kept[i] and tokens[i] of each
 * slot not kept as it was. *anew: whether keep() ran (the copies' bytes may
 * have grown). */
static int
keep_all(const Keeping *self, PyObject *values, PyObject *kept, PyObject *tokens,
         const Py_ssize_t *sources, PyObject *seq, int *anew)
{
    Py_ssize_t count = PyList_GET_SIZE(values);
    /* A slot reusing another's kept value reads it at its old place: the
     * lists are copied first only where that place changes or is cut off
     * (most records only push or replace values). */
    int copy = 0;
    for (Py_ssize_t i = 0; i < count && !copy; i++) {
        Py_ssize_t j = sources[i];
        copy = j >= 0 && j != i && (j >= count || sources[j] != j);
    }
    PyObject *old_kept = copy ? PyList_GetSlice(kept, 0, PY_SSIZE_T_MAX) : Py_NewRef(kept);
    PyObject *old_tokens = copy ? PyList_GetSlice(tokens, 0, PY_SSIZE_T_MAX) : Py_NewRef(tokens);
    int failed = old_kept == NULL || old_tokens == NULL ||
        (PyList_GET_SIZE(kept) > count && PyList_SetSlice(kept, count, PY_SSIZE_T_MAX, NULL) < 0) ||
        (PyList_GET_SIZE(tokens) > count &&
         PyList_SetSlice(tokens, count, PY_SSIZE_T_MAX, NULL) < 0);
    for (Py_ssize_t i = 0; i < count && !failed; i++) {
        Py_ssize_t j = sources[i];
        if (j == i)
            continue;
        PyObject *kept_value, *token;
        if (j >= 0) {
            if (j >= PyList_GET_SIZE(old_kept) || j >= PyList_GET_SIZE(old_tokens)) {
                PyErr_SetString(PyExc_RuntimeError, "history: a track's lists differ in length");
                failed = 1;
                break;
            }
            kept_value = Py_NewRef(PyList_GET_ITEM(old_kept, j));
            token = Py_NewRef(PyList_GET_ITEM(old_tokens, j));
        }
        else {
            if (keep_value(self, PyList_GET_ITEM(values, i), seq, 0, &kept_value, &token,
                           anew) < 0) {
                failed = 1;
                break;
            }
        }
        if (i < PyList_GET_SIZE(kept) && i < PyList_GET_SIZE(tokens)) {
            PyList_SetItem(kept, i, kept_value);    /* steals */
            PyList_SetItem(tokens, i, token);
        }
        else {
            failed = PyList_Append(kept, kept_value) < 0 || PyList_Append(tokens, token) < 0;
            Py_DECREF(kept_value);
            Py_DECREF(token);
        }
    }
    Py_XDECREF(old_kept);
    Py_XDECREF(old_tokens);
    return failed ? -1 : 0;
}

#endif
