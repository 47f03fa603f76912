"""Questions' reads on PostgreSQL read replicas (`DATABASE_REPLICA_URLS`): `routing`."""
