import NimbusCore
import NimbusPostgres
import NimbusSupport

/// An enrollment attempt counted against the failure limits until `enroll` succeeds with it
/// (which deletes it) or `releaseEnrollment` gives it back.
package struct EnrollmentReservation: Sendable, Hashable {
    /// The `enrollment_failures` row; nil when both limits are off and nothing was counted.
    package let id: Int64?
}

/// What `reserveEnrollment` answers: go ahead, or the throttle's refusal.
package enum EnrollmentAdmission: Sendable, Equatable {
    case reserved(EnrollmentReservation)
    case refused(retryAfterSeconds: Int, scope: EnrollmentThrottle.Scope)
}

/// The enrollment failure limits for the whole server (docs/api.md "Devices"): every instance
/// counts in `enrollment_failures`. An attempt is reserved (counted) before its code is checked,
/// so a burst of simultaneous attempts cannot all pass a check made before any was counted.
extension DeviceStore {
    /// Counts an attempt from `address` unless the limits refuse it. A refusal is read without a
    /// lock first (cheap under a flood: the count only grows until rows age out); an admission is
    /// decided again and written under the table's lock, which orders all reservations.
    package func reserveEnrollment(from address: String, throttle: EnrollmentThrottle) async throws -> EnrollmentAdmission {
        guard throttle.isOn else { return .reserved(EnrollmentReservation(id: nil)) }
        let now = clock.nowMilliseconds()
        let seen = try await pool.query(Self.recentFailures(from: address, throttle: throttle, now: now), decode: Self.decodeFailure)
        if case .refused(let seconds, let scope) = throttle.decide(Self.recent(seen), now: now) {
            return .refused(retryAfterSeconds: seconds, scope: scope)
        }
        return try await pool.withTransaction { connection in
            try connection.run("LOCK TABLE enrollment_failures IN SHARE ROW EXCLUSIVE MODE")
            try connection.run("""
                DELETE FROM enrollment_failures
                WHERE attempted_at <= 'epoch'::timestamptz + \(EnrollmentThrottle.windowStart(now: now)) * interval '1 millisecond'
                """)
            let rows = try connection.query(Self.recentFailures(from: address, throttle: throttle, now: now), decode: Self.decodeFailure)
            if case .refused(let seconds, let scope) = throttle.decide(Self.recent(rows), now: now) {
                return .refused(retryAfterSeconds: seconds, scope: scope)
            }
            let id = try connection.queryFirst("""
                INSERT INTO enrollment_failures (address, attempted_at)
                VALUES (\(address), 'epoch'::timestamptz + \(now) * interval '1 millisecond') RETURNING id
                """) { try $0.int64(0) }
            return .reserved(EnrollmentReservation(id: id))
        }
    }

    /// Un-counts an attempt that turned out not to be a failed code (bad input, a name in use, an
    /// error). Best effort: if this fails, the attempt counts until it leaves the minute.
    package func releaseEnrollment(_ reservation: EnrollmentReservation) async {
        guard let id = reservation.id else { return }
        do {
            _ = try await pool.withConnection { try $0.run(Self.deleteReservation(id)) }
        } catch {
            Logger(subsystem: "store").warning("an enrollment reservation was not released", ["error": "\(error)"])
        }
    }

    /// The statement deleting a reservation's row (`enroll` runs it in its transaction on success).
    static func deleteReservation(_ id: Int64) -> SQL {
        "DELETE FROM enrollment_failures WHERE id = \(id)"
    }

    /// The newest failures that count at `now`, at most each limit's worth: all of them (`s`)
    /// and the address's (`a`).
    private static func recentFailures(from address: String, throttle: EnrollmentThrottle, now: Int64) -> SQL {
        let since = EnrollmentThrottle.windowStart(now: now)
        return """
            (SELECT 's', attempted_at FROM enrollment_failures
             WHERE attempted_at > 'epoch'::timestamptz + \(since) * interval '1 millisecond'
             ORDER BY attempted_at DESC LIMIT \(Int64(max(throttle.overall, 0))))
            UNION ALL
            (SELECT 'a', attempted_at FROM enrollment_failures
             WHERE address = \(address) AND attempted_at > 'epoch'::timestamptz + \(since) * interval '1 millisecond'
             ORDER BY attempted_at DESC LIMIT \(Int64(max(throttle.perAddress, 0))))
            """
    }

    private static func decodeFailure(_ row: PGRow) throws -> (serverWide: Bool, at: Int64) {
        (try row.string(0) == "s", try row.milliseconds(1))
    }

    private static func recent(_ rows: [(serverWide: Bool, at: Int64)]) -> EnrollmentThrottle.Recent {
        EnrollmentThrottle.Recent(overall: rows.filter(\.serverWide).map(\.at), fromAddress: rows.filter { !$0.serverWide }.map(\.at))
    }
}
