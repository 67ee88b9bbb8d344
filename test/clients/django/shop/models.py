from django.db import models

from .fields import SnowflakeAutoField, SnowflakeTypeAutoField


class Customer(models.Model):
    # No id field: DEFAULT_AUTO_FIELD makes it a SnowflakeAutoField.
    name = models.TextField()


# docs: django-model
class Order(models.Model):
    id = SnowflakeAutoField(primary_key=True)
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    item = models.TextField()
# end docs


# docs: django-bounds
class SnowflakeMinId(models.Func):
    function = "snowflake_min_id"
    output_field = models.BigIntegerField()


class SnowflakeMaxId(models.Func):
    function = "snowflake_max_id"
    output_field = models.BigIntegerField()
# end docs


# docs: django-snowflake-model
class Ticket(models.Model):
    id = SnowflakeTypeAutoField(primary_key=True)
    item = models.TextField()
# end docs
