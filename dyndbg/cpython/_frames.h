/* What the compiled slot reader (_frames.c) gives the other extensions,
 * through its capsule: engine/recording/_history.c reads a frame's slots at
 * each recorded instruction with it, with no Python call between. */
#ifndef DYNDBG_FRAMES_H
#define DYNDBG_FRAMES_H

#include <Python.h>

/* The capsule, the module's API attribute */
#define DYNDBG_FRAMES_CAPSULE "dyndbg.cpython._frames.API"

/* The capsule's array of function pointers, by index */
enum FramesApi {
    FRAMES_API_READ_AT_EVENT = 0,
    FRAMES_API_SIZE,
};

/* valuestack._at_event: the frame's slots at an instruction event, a list
 * (owned), or NULL with an error set (StackUnavailable where they cannot be
 * read). `depths` (borrowed) maps the code's offsets to the stack depth
 * before each, or is None where the top is stored (3.11). */
typedef PyObject *(*dyndbg_read_at_event_fn)(PyObject *frame, PyObject *depths, int with_locals);

#endif
