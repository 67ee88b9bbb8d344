import psycopg2.extensions
from django.db import models


# docs: django-field
class SnowflakeAutoField(models.BigAutoField):
    """A bigint primary key that PostgreSQL fills with snowflake_nextval().

    As an auto field, Django leaves it out of INSERTs and reads it back
    with RETURNING, and foreign keys to it are bigint."""

    def db_type(self, connection):
        return "bigint DEFAULT snowflake_nextval()"

    def db_type_suffix(self, connection):
        return None     # no GENERATED ... AS IDENTITY (Django 4.1+)
# end docs


# docs: django-snowflake-field
class SnowflakeTypeAutoField(models.BigAutoField):
    """A primary key of type snowflake that PostgreSQL fills with
    snowflake_nextval()."""

    def db_type(self, connection):
        return "snowflake DEFAULT snowflake_nextval()"

    def db_type_suffix(self, connection):
        return None
# end docs


# docs: django-snowflake-adapter
def snowflake_as_int(sender, connection, **kwargs):
    """On each new connection, has psycopg2 read the snowflake type as
    int8, a Python int, instead of a str."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'snowflake'::regtype::oid")
        oid = cursor.fetchone()[0]
    snowflake = psycopg2.extensions.new_type((oid,), "SNOWFLAKE", psycopg2.extensions.INTEGER)
    psycopg2.extensions.register_type(snowflake, connection.connection)
# end docs
