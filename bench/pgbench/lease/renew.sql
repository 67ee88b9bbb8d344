\set token :client_id + 1
SELECT not_after FROM snowflake_renew_lease(:token, NULL);
