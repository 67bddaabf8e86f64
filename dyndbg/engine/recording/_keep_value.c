/* What is kept of a new value, in C, as recorded_values.py's
 * ValueKeeper.keep keeps it (_kept_values.h): values kept as they are, a
 * tensor whose latest copy still holds, small lists and tuples of those;
 * everything else, a new tensor copy included, through the Python keep(). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_kept_values.h"

/* _Items(items, tokens), set as its __init__ sets it, without running it:
 * a Python frame started here also goes through dynamo's frame callback,
 * which costs more than the rest of the record. The token (owned), or NULL
 * with an error set. */
static PyObject *
new_items_token(const Keeping *self, PyObject *items, PyObject *tokens)
{
    PyTypeObject *type = (PyTypeObject *)self->items_type;    /* borrowed */
    PyObject *token = type->tp_alloc(type, 0);     /* owned */
    if (token == NULL)
        return NULL;
    PyObject *zero = PyLong_FromLong(0);       /* owned */
    if (zero == NULL) {
        Py_DECREF(token);
        return NULL;
    }
    dyndbg_field_set(token, self->items_items, items);
    dyndbg_field_set(token, self->items_tokens, tokens);
    dyndbg_field_set(token, self->items_last, zero);
    Py_DECREF(zero);
    return token;
}

static dyndbg_truth known_copy(const Keeping *self, PyObject *tensor, PyObject *seq,
                               PyObject **kept, PyObject **token);
static dyndbg_status keep_container(const Keeping *self, PyObject *value, PyObject *seq,
                                    Py_ssize_t depth, PyObject **kept, PyObject **token,
                                    int *anew);

dyndbg_status
dyndbg_keep_value(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
                  PyObject **kept, PyObject **token, int *anew)
{
    PyObject *kind = (PyObject *)Py_TYPE(value);      /* borrowed */
    dyndbg_truth found = PySet_Contains(self->as_is, kind);
    if (found != DYNDBG_FALSE) {
        if (found == DYNDBG_ERROR)
            return DYNDBG_ERROR;
        *kept = Py_NewRef(value);
        *token = Py_NewRef(Py_None);
        return DYNDBG_OK;
    }
    if (PySlice_Check(value)) {     /* of values kept as they are: itself, as keep() */
        PySliceObject *parts = (PySliceObject *)value;
        found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->start));
        if (found == DYNDBG_TRUE)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->stop));
        if (found == DYNDBG_TRUE)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->step));
        if (found == DYNDBG_ERROR)
            return DYNDBG_ERROR;
        if (found == DYNDBG_TRUE) {
            *kept = Py_NewRef(value);
            *token = Py_NewRef(Py_None);
            return DYNDBG_OK;
        }
    }
    if (self->tensor_types != NULL) {
        found = PySet_Contains(self->tensor_types, kind);
        if (found == DYNDBG_ERROR)
            return DYNDBG_ERROR;
        if (found == DYNDBG_TRUE) {
            dyndbg_truth known = known_copy(self, value, seq, kept, token);
            if (known != DYNDBG_FALSE)
                return known == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_OK;
        }
        else if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) &&
                 depth < self->container_depth && Py_SIZE(value) <= self->container_items)
            return keep_container(self, value, seq, depth, kept, token, anew);
    }
    *anew = 1;
    PyObject *depth_object = PyLong_FromSsize_t(depth);      /* owned */
    if (depth_object == NULL)
        return DYNDBG_ERROR;
    PyObject *pair = PyObject_CallFunctionObjArgs(self->keep, value, seq, depth_object,
                                                  NULL);      /* owned: a Kept */
    Py_DECREF(depth_object);
    if (pair == NULL || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != KEPT_FIELDS) {
        if (pair != NULL)
            PyErr_SetString(PyExc_TypeError, "history: keep() gave no pair");
        Py_XDECREF(pair);
        return DYNDBG_ERROR;
    }
    *kept = Py_NewRef(PyTuple_GET_ITEM(pair, KEPT_VALUE));
    *token = Py_NewRef(PyTuple_GET_ITEM(pair, KEPT_TOKEN));
    Py_DECREF(pair);
    return DYNDBG_OK;
}

/* ValueKeeper._tensor's first case: the tensor's latest copy is of this
 * tensor (its weak reference) and of its version now: that copy, its
 * `last` set to seq, into *kept and *token (owned). DYNDBG_TRUE when so,
 * DYNDBG_FALSE when keep() must decide, DYNDBG_ERROR. */
static dyndbg_truth
known_copy(const Keeping *self, PyObject *tensor, PyObject *seq, PyObject **kept, PyObject **token)
{
    PyObject *key = PyLong_FromVoidPtr(tensor);     /* owned */
    if (key == NULL)
        return DYNDBG_ERROR;
    PyObject *known = Py_XNewRef(PyDict_GetItemWithError(self->copies, key));     /* owned */
    Py_DECREF(key);
    if (known == NULL)
        return PyErr_Occurred() ? DYNDBG_ERROR : DYNDBG_FALSE;
    if ((PyObject *)Py_TYPE(known) != self->copy_type) {
        Py_DECREF(known);
        return DYNDBG_FALSE;
    }
    dyndbg_truth holds = DYNDBG_ERROR;
    PyObject *ref = Py_XNewRef(dyndbg_field_get(known, self->copy_ref));     /* owned */
    PyObject *target = ref ? PyObject_CallNoArgs(ref) : NULL;              /* owned */
    if (target != NULL) {
        holds = target == tensor ? DYNDBG_TRUE : DYNDBG_FALSE;
        if (holds == DYNDBG_TRUE)     /* _Copy.holds: a version, the tensor's own now */
            holds = dyndbg_token_holds(self, known, tensor, seq);
        if (holds == DYNDBG_TRUE) {
            *kept = Py_XNewRef(dyndbg_field_get(known, self->copy_tensor));
            *token = Py_NewRef(known);
            if (*kept == NULL) {
                Py_CLEAR(*token);
                holds = DYNDBG_ERROR;
            }
        }
    }
    if (holds == DYNDBG_ERROR && PyErr_ExceptionMatches(PyExc_RuntimeError)) {
        PyErr_Clear();     /* an inference tensor has no _version: keep() copies it */
        holds = DYNDBG_FALSE;
    }
    Py_XDECREF(ref);
    Py_XDECREF(target);
    Py_DECREF(known);
    return holds;
}

/* ValueKeeper._container for a list or tuple within the bounds: a new one
 * of kept items (a tuple of values kept as they are: itself), its token an
 * _Items of the items and their tokens, or VOLATILE if one is: into *kept
 * and *token (owned). */
static dyndbg_status
keep_container(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
               PyObject **kept, PyObject **token, int *anew)
{
    PyObject *items = PySequence_Tuple(value);     /* owned */
    if (items == NULL)
        return DYNDBG_ERROR;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *kept_items = PyList_New(n), *tokens = PyList_New(n);    /* owned */
    int failed = kept_items == NULL || tokens == NULL, any_token = 0, same = 1, stable = 1;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);      /* borrowed */
        PyObject *kept_item, *item_token;                /* owned, then the lists' */
        if (dyndbg_keep_value(self, item, seq, depth + 1, &kept_item, &item_token, anew) < 0) {
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
                dyndbg_untrack(*kept);
        }
    }
    Py_DECREF(items);
    Py_XDECREF(kept_items);
    Py_XDECREF(tokens);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}
