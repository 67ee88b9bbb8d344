/*
 * fence_probe.cpp
 *	  Must NOT compile: "make corefence" compiles it with the core's flags
 *	  and fails if it does.  A core header and then a server header, the
 *	  order that a guard included first cannot see.
 */
#include "core/layout.hpp"

#include "postgres.h"
