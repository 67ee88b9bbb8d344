SELECT snowflake_nextval();
