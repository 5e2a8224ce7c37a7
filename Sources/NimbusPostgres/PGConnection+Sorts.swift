import CLibPQ

/// The planner's sorts, off for the statements that must read in an index's order
/// (`PGPool.readInIndexOrder`) and on for every other.
///
/// The setting is a session's: `SET enable_sort = off` is sent before such a statement only when
/// the session has its sorts on, and `RESET enable_sort` before any other statement only when it
/// has them off. A run of `records/changes` pages on one connection pays no round trip for it;
/// setting and resetting around each page were two more round trips a page (`bench/records.sh`
/// changes: 0.64x of the equal-work replay, 0.77x without them).
///
/// Only outside a transaction, and only where each connection is its own server session (no
/// transaction pooler): a setting changed in a transaction goes back at its rollback, and behind
/// a pooler the next statement may run in another session. There the pool sets and resets the
/// setting around the statement, as before (`keepsSessionSettings`).
extension PGConnection {
    /// Whether a setting left in this session stays with it until this connection changes it.
    package var keepsSessionSettings: Bool {
        naming.isOn && !isInTransaction
    }

    /// The statement that puts the session's sorts where a statement wanting them `off` (or on)
    /// needs them, if any; the caller sends it and then sets `sortsOff`.
    func sortsChange(off wanted: Bool) -> SQL? {
        guard wanted != sortsOff else { return nil }
        // Off here means set in this transaction (its BEGIN put them back on): its ROLLBACK, the
        // one statement a failed transaction takes, puts them back too.
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            sortsOff = false
            return nil
        }
        return wanted ? "SET enable_sort = off" : "RESET enable_sort"
    }

    /// Sends the change a statement that wants the sorts `off` (or on) needs first, waiting for it.
    func placeSorts(off wanted: Bool) throws {
        guard let change = sortsChange(off: wanted) else { return }
        guard let result = PQexec(handle, change.text) else { throw lostError() }
        defer { PQclear(result) }
        try check(result)
        sortsOff = wanted
    }
}
