"""The smallest Django project that shows snowflake primary keys: one app,
the database from the PG* environment variables (test/clients/run.sh sets
them; PGHOST is the directory of the server's Unix socket)."""

import os

SECRET_KEY = "snowflake clients test"
USE_TZ = True
INSTALLED_APPS = ["shop"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["PGDATABASE"],
        "USER": os.environ.get("PGUSER", ""),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
    }
}
# docs: django-settings
# Every model without an explicit primary key gets a snowflake one.
DEFAULT_AUTO_FIELD = "shop.fields.SnowflakeAutoField"
# end docs
