-- The changelog's revisions are assigned by kapi's single writer, never by
-- SQLite: AUTOINCREMENT only kept the newest revision in sqlite_sequence, a
-- page more in every write's transaction. The newest revision is now the
-- newest row's, or the compacted revision when compaction removed that row
-- (compaction removes rows at or below the revision it records, nothing
-- newer): MAX(MAX(changelog.rev), meta.compacted_rev) in both cases, so no
-- revision is handed out twice. That is also what sqlite_sequence held for a
-- database written before this migration: the largest revision inserted, of
-- a row still there or of one compaction removed at or below compacted_rev.
CREATE TABLE changelog_rebuilt (
    rev       INTEGER PRIMARY KEY,
    resource  TEXT    NOT NULL, -- "<group>/<plural>", "core" group is ""
    namespace TEXT    NOT NULL, -- "" for cluster-scoped objects
    name      TEXT    NOT NULL,
    op        INTEGER NOT NULL, -- 1 added, 2 modified, 3 deleted
    prev_rev  INTEGER NOT NULL, -- rev of the previous state of this key, 0 if none
    ts        INTEGER NOT NULL, -- commit time, unix milliseconds (compaction by age)
    data      BLOB    NOT NULL  -- the object's JSON at this revision
);
INSERT INTO changelog_rebuilt (rev, resource, namespace, name, op, prev_rev, ts, data)
    SELECT rev, resource, namespace, name, op, prev_rev, ts, data FROM changelog ORDER BY rev;
DROP TABLE changelog;
ALTER TABLE changelog_rebuilt RENAME TO changelog;
CREATE INDEX changelog_key ON changelog (resource, namespace, name, rev);
