/*
 * postgres_headers.hpp
 *	  The PostgreSQL headers the glue layer uses, with C linkage.
 *
 * PostgreSQL's headers are C.  Including them in one place, inside one
 * extern "C" block, keeps every declaration's linkage right.
 */
#ifndef SNOWFLAKE_PG_POSTGRES_HEADERS_HPP
#define SNOWFLAKE_PG_POSTGRES_HEADERS_HPP

extern "C"
{
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "common/file_perm.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "tcop/tcopprot.h"
#include "access/xloginsert.h"
#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/snapmgr.h"
#include "storage/spin.h"
#include "postmaster/postmaster.h"
}

#endif							/* SNOWFLAKE_PG_POSTGRES_HEADERS_HPP */
