import NimbusHTTP

/// The last requests answered, for the console's Requests page: what was asked and how it went,
/// never who with which secret (no tokens, no bodies, no query strings). A fixed number of
/// entries; the oldest is overwritten. Also counts answers per minute by status for the overview.
package struct RequestRing: Sendable {
    /// One answered request.
    package struct Entry: Sendable, Hashable {
        /// Milliseconds since 1970 when it was answered.
        package var at: Int64
        package var method: String
        /// The route pattern (`/database/1/:container/...`), not the path: no names or ids.
        package var route: String
        package var status: Int
        package var milliseconds: Double
        /// Who asked, once the token was checked: the user's userRecordName and the device's name.
        package var user: String?
        package var device: String?
        /// The error answer's serverErrorCode.
        package var serverErrorCode: String?
        /// The client's address: as a trusted proxy forwarded it, else the connection's peer.
        package var client: String {
            switch clientAddress {
            case .peer(let peer): peer.description
            case .forwarded(let client): client
            }
        }
        /// Kept as it came and printed when the log is read, not for every request answered.
        private var clientAddress: ClientAddress

        private enum ClientAddress: Hashable {
            case peer(PeerAddress)
            case forwarded(String)
        }

        package init(at: Int64, method: String, route: String, status: Int, milliseconds: Double,
                     user: String? = nil, device: String? = nil, serverErrorCode: String? = nil,
                     client: String = "unknown") {
            self.init(at: at, method: method, route: route, status: status, milliseconds: milliseconds, user: user,
                      device: device, serverErrorCode: serverErrorCode, peer: .unknown, forwardedClient: client)
        }

        /// An entry whose client is `forwardedClient` when a trusted proxy named one, else `peer`.
        package init(at: Int64, method: String, route: String, status: Int, milliseconds: Double,
                     user: String?, device: String?, serverErrorCode: String?,
                     peer: PeerAddress, forwardedClient: String?) {
            self.at = at
            self.method = method
            self.route = route
            self.status = status
            self.milliseconds = milliseconds
            self.user = user
            self.device = device
            self.serverErrorCode = serverErrorCode
            clientAddress = forwardedClient.map(ClientAddress.forwarded) ?? .peer(peer)
        }
    }

    /// Answers in one minute, by status.
    package struct Minute: Sendable, Hashable {
        /// Minutes since 1970.
        package var minute: Int64
        package var countsByStatus: [Int: Int]
    }

    package let capacity: Int
    private var entries: [Entry] = []
    private var next = 0
    private var minutes: [Minute] = []
    /// How many minutes of counts are kept.
    package static let minutesKept = 60

    package init(capacity: Int) {
        self.capacity = max(capacity, 0)
        entries.reserveCapacity(self.capacity)
    }

    package mutating func append(_ entry: Entry) {
        let minute = entry.at / 60_000
        if let last = minutes.last, last.minute == minute {
            minutes[minutes.count - 1].countsByStatus[entry.status, default: 0] += 1
        } else {
            minutes.append(Minute(minute: minute, countsByStatus: [entry.status: 1]))
            minutes.removeAll { $0.minute <= minute - Int64(Self.minutesKept) }
        }
        guard capacity > 0 else { return }
        if entries.count < capacity {
            entries.append(entry)
        } else {
            entries[next] = entry
        }
        next = (next + 1) % capacity
    }

    /// The kept entries, newest first.
    package var newestFirst: [Entry] {
        guard entries.count == capacity, capacity > 0 else { return entries.reversed() }
        return (entries[next...] + entries[..<next]).reversed()
    }

    /// Counts of the last `minutesKept` minutes before `now` (milliseconds), oldest first; minutes
    /// without answers are present with no counts.
    package func perMinute(now: Int64) -> [Minute] {
        let current = now / 60_000
        let byMinute = Dictionary(minutes.map { ($0.minute, $0) }, uniquingKeysWith: { first, _ in first })
        return (current - Int64(Self.minutesKept) + 1 ... current).map { byMinute[$0] ?? Minute(minute: $0, countsByStatus: [:]) }
    }
}
