INSERT INTO bench_durable VALUES (:client_id);
