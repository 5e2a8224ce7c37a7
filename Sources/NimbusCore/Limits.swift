/// Every named limit of the service with its default (docs/api.md "Limits"). `GET /limits` shows the
/// configured values under these names; each is overridable by flag and environment variable.
package struct Limits: Sendable, Hashable {
    package var maxOperationsPerRequest = 400
    package var maxRecordBytes = 1 << 20
    package var maxRequestBytes = 8 << 20
    package var maxResultsLimit = 400
    package var defaultResultsLimit = 200
    package var maxWaitSeconds = 55
    package var heartbeatSeconds = 20
    package var maxAssetBytes = 50 << 20
    package var maxAssetTokensPerRequest = 200
    package var userQuotaBytes: Int = 2 << 30
    package var maxWaitersPerDevice = 8
    package var maxWaiters = 10_000
    package var notificationRetentionDays = 7
    package var tombstoneRetentionDays = 90
    package var maxRequestLineBytes = 8192
    package var maxHeaderLineBytes = 8192
    package var maxHeaderBytes = 65536
    package var maxHeaderCount = 100
    package var headerTimeoutSeconds = 10
    package var bodyTimeoutSeconds = 30
    /// A request body must arrive within bodyTimeoutSeconds plus one second per this many bytes
    /// received (0: no minimum): a client trickling a byte just before each body timeout is cut
    /// off instead of holding its connection for ever.
    package var minBodyBytesPerSecond = 1024
    package var keepAliveTimeoutSeconds = 60
    package var maxConnections = 10_000
    /// Per bearer token: sustained requests per second (0: no limit) and the burst allowed at once.
    package var requestsPerSecondPerToken = 100
    package var requestBurstPerToken = 200
    /// Devices (docs/api.md "Devices"): how long a pairing code lives, how many unexpired codes a
    /// user may hold, and failed enrollments allowed per minute from one address and in all
    /// (per instance; 0: no limit).
    package var pairingCodeSeconds = 600
    package var maxPendingPairingCodes = 5
    package var enrollFailuresPerMinutePerAddress = 10
    package var enrollFailuresPerMinute = 100
    /// Push (docs/api.md "Push to sleeping devices"): how long a push waits for a device that had a
    /// long-poll parked when its notification was written, background pushes to one device in
    /// any hour, and the largest APNs payload.
    package var pushGraceMillis = 1500
    package var maxBackgroundPushesPerHour = 3
    package var maxPushPayloadBytes = 4096

    package init() {}

    /// The limits as (name, value) pairs in a stable order, for `/limits` and the start-up log.
    package var namedValues: [(name: String, value: Int)] {
        [
            ("maxOperationsPerRequest", maxOperationsPerRequest),
            ("maxRecordBytes", maxRecordBytes),
            ("maxRequestBytes", maxRequestBytes),
            ("maxResultsLimit", maxResultsLimit),
            ("defaultResultsLimit", defaultResultsLimit),
            ("maxWaitSeconds", maxWaitSeconds),
            ("heartbeatSeconds", heartbeatSeconds),
            ("maxAssetBytes", maxAssetBytes),
            ("maxAssetTokensPerRequest", maxAssetTokensPerRequest),
            ("userQuotaBytes", userQuotaBytes),
            ("maxWaitersPerDevice", maxWaitersPerDevice),
            ("maxWaiters", maxWaiters),
            ("notificationRetentionDays", notificationRetentionDays),
            ("tombstoneRetentionDays", tombstoneRetentionDays),
            ("maxRequestLineBytes", maxRequestLineBytes),
            ("maxHeaderLineBytes", maxHeaderLineBytes),
            ("maxHeaderBytes", maxHeaderBytes),
            ("maxHeaderCount", maxHeaderCount),
            ("headerTimeoutSeconds", headerTimeoutSeconds),
            ("bodyTimeoutSeconds", bodyTimeoutSeconds),
            ("minBodyBytesPerSecond", minBodyBytesPerSecond),
            ("keepAliveTimeoutSeconds", keepAliveTimeoutSeconds),
            ("maxConnections", maxConnections),
            ("requestsPerSecondPerToken", requestsPerSecondPerToken),
            ("requestBurstPerToken", requestBurstPerToken),
            ("pairingCodeSeconds", pairingCodeSeconds),
            ("maxPendingPairingCodes", maxPendingPairingCodes),
            ("enrollFailuresPerMinutePerAddress", enrollFailuresPerMinutePerAddress),
            ("enrollFailuresPerMinute", enrollFailuresPerMinute),
            ("pushGraceMillis", pushGraceMillis),
            ("maxBackgroundPushesPerHour", maxBackgroundPushesPerHour),
            ("maxPushPayloadBytes", maxPushPayloadBytes),
        ]
    }

    /// Sets a limit by its `/limits` name; false when no limit has that name.
    package mutating func set(_ name: String, to value: Int) -> Bool {
        switch name {
        case "maxOperationsPerRequest": maxOperationsPerRequest = value
        case "maxRecordBytes": maxRecordBytes = value
        case "maxRequestBytes": maxRequestBytes = value
        case "maxResultsLimit": maxResultsLimit = value
        case "defaultResultsLimit": defaultResultsLimit = value
        case "maxWaitSeconds": maxWaitSeconds = value
        case "heartbeatSeconds": heartbeatSeconds = value
        case "maxAssetBytes": maxAssetBytes = value
        case "maxAssetTokensPerRequest": maxAssetTokensPerRequest = value
        case "userQuotaBytes": userQuotaBytes = value
        case "maxWaitersPerDevice": maxWaitersPerDevice = value
        case "maxWaiters": maxWaiters = value
        case "notificationRetentionDays": notificationRetentionDays = value
        case "tombstoneRetentionDays": tombstoneRetentionDays = value
        case "maxRequestLineBytes": maxRequestLineBytes = value
        case "maxHeaderLineBytes": maxHeaderLineBytes = value
        case "maxHeaderBytes": maxHeaderBytes = value
        case "maxHeaderCount": maxHeaderCount = value
        case "headerTimeoutSeconds": headerTimeoutSeconds = value
        case "bodyTimeoutSeconds": bodyTimeoutSeconds = value
        case "minBodyBytesPerSecond": minBodyBytesPerSecond = value
        case "keepAliveTimeoutSeconds": keepAliveTimeoutSeconds = value
        case "maxConnections": maxConnections = value
        case "requestsPerSecondPerToken": requestsPerSecondPerToken = value
        case "requestBurstPerToken": requestBurstPerToken = value
        case "pairingCodeSeconds": pairingCodeSeconds = value
        case "maxPendingPairingCodes": maxPendingPairingCodes = value
        case "enrollFailuresPerMinutePerAddress": enrollFailuresPerMinutePerAddress = value
        case "enrollFailuresPerMinute": enrollFailuresPerMinute = value
        case "pushGraceMillis": pushGraceMillis = value
        case "maxBackgroundPushesPerHour": maxBackgroundPushesPerHour = value
        case "maxPushPayloadBytes": maxPushPayloadBytes = value
        default: return false
        }
        return true
    }
}
