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
