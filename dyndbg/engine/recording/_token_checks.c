/* Whether a kept value is still as a record kept it, in C, as
 * recorded_values.py tells it (_kept_values.h): the tokens' checks (a
 * tensor's _Copy of the same version, an _Items of the same unchanged
 * items), and where the tokens' fields lie. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../cpython/_members.h"
#include "_kept_values.h"

static PyObject *str_tensor_version, *str_last, *str_holds;    /* interned, owned */

dyndbg_status
dyndbg_keeping_intern(void)
{
    return dyndbg_intern(&str_tensor_version, "_version") || dyndbg_intern(&str_last, "last") ||
           dyndbg_intern(&str_holds, "holds") ? DYNDBG_ERROR : DYNDBG_OK;
}

/* *offset = the offset of type.name, a __slots__ field (an object member);
 * a TypeError when it is something else. */
static dyndbg_status
slot_offset(PyObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *descriptor = PyObject_GetAttrString(type, name);    /* owned */
    if (descriptor == NULL)
        return DYNDBG_ERROR;
    int member = Py_IS_TYPE(descriptor, &PyMemberDescr_Type) &&
        ((PyMemberDescrObject *)descriptor)->d_member->type == Py_T_OBJECT_EX;
    if (member)
        *offset = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "history: %R.%s is not a __slots__ field", type, name);
    Py_DECREF(descriptor);
    return member ? DYNDBG_OK : DYNDBG_ERROR;
}

dyndbg_status
dyndbg_keeping_fields(Keeping *self)
{
    if (slot_offset(self->copy_type, "version", &self->copy_version) < 0 ||
        slot_offset(self->copy_type, "last", &self->copy_last) < 0 ||
        slot_offset(self->copy_type, "ref", &self->copy_ref) < 0 ||
        slot_offset(self->copy_type, "tensor", &self->copy_tensor) < 0)
        return DYNDBG_ERROR;
    if (self->items_type == NULL)
        return DYNDBG_OK;
    return slot_offset(self->items_type, "items", &self->items_items) < 0 ||
        slot_offset(self->items_type, "tokens", &self->items_tokens) < 0 ||
        slot_offset(self->items_type, "last", &self->items_last) < 0 ? DYNDBG_ERROR : DYNDBG_OK;
}

static dyndbg_truth token_check(const Keeping *self, PyObject *token, PyObject *value);

/* _Items.holds for a list or tuple, inline: the same items, each unchanged
 * (its token None or holding). */
static dyndbg_truth
items_check(const Keeping *self, PyObject *token, PyObject *container)
{
    PyObject *items = Py_XNewRef(dyndbg_field_get(token, self->items_items));      /* owned */
    PyObject *tokens =
        items ? Py_XNewRef(dyndbg_field_get(token, self->items_tokens)) : NULL;     /* owned */
    dyndbg_truth holds = DYNDBG_ERROR;
    if (tokens == NULL)
        goto done;
    if (!PyTuple_Check(items) || !PyList_Check(tokens)) {
        PyErr_SetString(PyExc_TypeError, "history: an _Items token's fields are of other types");
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    holds = DYNDBG_FALSE;
    if (Py_SIZE(container) != n || PyList_GET_SIZE(tokens) != n)
        goto done;
    PyObject **now = PyList_CheckExact(container) ? ((PyListObject *)container)->ob_item
                                                  : ((PyTupleObject *)container)->ob_item;
    for (Py_ssize_t i = 0; i < n; i++)
        if (now[i] != PyTuple_GET_ITEM(items, i))
            goto done;
    holds = DYNDBG_TRUE;
    for (Py_ssize_t i = 0; i < n && holds == DYNDBG_TRUE; i++) {
        PyObject *item_token = Py_NewRef(PyList_GET_ITEM(tokens, i));      /* owned */
        if (item_token != Py_None)
            holds = token_check(self, item_token, PyTuple_GET_ITEM(items, i));
        Py_DECREF(item_token);
    }
done:
    Py_XDECREF(items);
    Py_XDECREF(tokens);
    return holds;
}

/* The token says `value` is as it was kept: recorded_values' token.holds(),
 * without touching the token. */
static dyndbg_truth
token_check(const Keeping *self, PyObject *token, PyObject *value)
{
    if (token == self->volatile_token)
        return DYNDBG_FALSE;
    dyndbg_truth holds;
    if ((PyObject *)Py_TYPE(token) == self->copy_type) {
        /* _Copy.holds, inline: its version is not None and equals _version now */
        PyObject *kept = Py_XNewRef(dyndbg_field_get(token, self->copy_version));     /* owned */
        if (kept == NULL)
            return DYNDBG_ERROR;
        if (kept == Py_None) {
            Py_DECREF(kept);
            return DYNDBG_FALSE;
        }
        PyObject *now = PyObject_GetAttr(value, str_tensor_version);      /* owned */
        if (now == NULL) {
            Py_DECREF(kept);
            return DYNDBG_ERROR;
        }
        holds = PyObject_RichCompareBool(kept, now, Py_EQ);
        Py_DECREF(kept);
        Py_DECREF(now);
        return holds;
    }
    if (self->items_type != NULL && (PyObject *)Py_TYPE(token) == self->items_type &&
        (PyList_CheckExact(value) || PyTuple_CheckExact(value))) {
        Py_INCREF(value);       /* owned while its items are compared */
        holds = items_check(self, token, value);
        Py_DECREF(value);
        return holds;
    }
    PyObject *result = PyObject_CallMethodOneArg(token, str_holds, value);    /* owned */
    if (result == NULL)
        return DYNDBG_ERROR;
    holds = PyObject_IsTrue(result);
    Py_DECREF(result);
    return holds;
}

dyndbg_truth
dyndbg_token_holds(const Keeping *self, PyObject *token, PyObject *value, PyObject *seq)
{
    dyndbg_truth holds = token_check(self, token, value);
    if (holds != DYNDBG_TRUE)
        return holds;
    if ((PyObject *)Py_TYPE(token) == self->copy_type)
        dyndbg_field_set(token, self->copy_last, seq);
    else if (self->items_type != NULL && (PyObject *)Py_TYPE(token) == self->items_type)
        dyndbg_field_set(token, self->items_last, seq);
    else if (PyObject_SetAttr(token, str_last, seq) < 0)
        return DYNDBG_ERROR;
    return holds;
}

