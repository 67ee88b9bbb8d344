/* snowflake--1.2--1.3.sql: least privilege, a pinned search_path, shared worker slots */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit
