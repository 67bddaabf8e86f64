/* history._Track in C for the compiled core (_track.c): a live recorded
 * frame's newest slots and what was kept of them, its fields read and set
 * by the recording loop (_record.c) without attribute look-ups; Python sees
 * the same attributes. */
#ifndef DYNDBG_TRACK_H
#define DYNDBG_TRACK_H

#include <Python.h>

#include "../../cpython/_capi.h"

typedef struct {
    PyObject_HEAD
    PyObject *caller;   /* seq of the caller's record when the frame started */
    PyObject *newest;   /* seq of its newest record */
    PyObject *raw;      /* list: the slots at its newest record */
    PyObject *kept;     /* list: what was kept of them */
    PyObject *tokens;   /* list: their tokens */
    PyObject *locals;   /* tuple: the newest record's locals */
    PyObject *opname;   /* of the newest record's instruction */
} Track;

extern DYNDBG_HIDDEN PyTypeObject DyndbgTrack_Type;

/* A list field of a track (owned); NULL with a TypeError set when it is not
 * a list. */
DYNDBG_HIDDEN PyObject *dyndbg_track_list(PyObject *value, const char *name);

#endif
