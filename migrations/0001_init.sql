-- The changelog is the history of every write. Its rev is the resourceVersion:
-- one global, strictly increasing integer (AUTOINCREMENT never reuses a value,
-- even after compaction deletes the newest rows).
CREATE TABLE changelog (
    rev       INTEGER PRIMARY KEY AUTOINCREMENT,
    resource  TEXT    NOT NULL, -- "<group>/<plural>", "core" group is ""
    namespace TEXT    NOT NULL, -- "" for cluster-scoped objects
    name      TEXT    NOT NULL,
    op        INTEGER NOT NULL, -- 1 added, 2 modified, 3 deleted
    prev_rev  INTEGER NOT NULL, -- rev of the previous state of this key, 0 if none
    ts        INTEGER NOT NULL, -- commit time, unix milliseconds (compaction by age)
    data      BLOB    NOT NULL  -- the object's JSON at this revision
);
CREATE INDEX changelog_key ON changelog (resource, namespace, name, rev);

-- objects points at the changelog row holding each live object's current state.
CREATE TABLE objects (
    resource  TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    rev       INTEGER NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;

-- meta holds store-wide values, e.g. the compacted revision.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('compacted_rev', 0);
