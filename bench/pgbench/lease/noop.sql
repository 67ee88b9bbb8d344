SELECT snowflake_bench_noop();
