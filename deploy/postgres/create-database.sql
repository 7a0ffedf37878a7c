-- The KNS database and its role, once, on the primary (through HAProxy's PostgreSQL frontend),
-- as PostgreSQL's superuser; Patroni replicates it. KNS then creates its tables itself
-- (`kns migrate`, or the first `kns serve`). The cluster test runs this file as it is.
--
--   psql "postgres://postgres@<haproxy>:5432/postgres" -v ON_ERROR_STOP=1 \
--        -v kns_password="$KNS_DB_PASSWORD" -f create-database.sql
--
-- The role owns its database and nothing else: no superuser, no CREATEROLE, no CREATEDB.
CREATE ROLE kns LOGIN PASSWORD :'kns_password';
CREATE DATABASE kns OWNER kns ENCODING 'UTF8' TEMPLATE template0;
-- PostgreSQL 15 no longer lets every role create in public; the owner of the database may.
\connect kns
ALTER SCHEMA public OWNER TO kns;
