SELECT snowflake_release_lease(token, NULL) FROM snowflake_lease_worker('bench', interval '1 minute');
