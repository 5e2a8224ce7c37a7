import Foundation

/// A subscription (`subscriptions/modify`): which changes make a notification, and what it shows.
public struct Subscription: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case query, zone, database }
    public enum Event: String, Sendable, Hashable, CaseIterable { case create, update, delete }

    public var subscriptionID: String
    public var kind: Kind
    /// For query subscriptions: the record type and the filters a record must match.
    public var recordType: String?
    public var filters: [Filter]
    /// A query subscription without a zone covers every zone.
    public var zoneID: ZoneID?
    public var firesOn: Set<Event>
    public var firesOnce: Bool
    public var notificationInfo: NotificationInfo

    public init(subscriptionID: String, kind: Kind, recordType: String? = nil, filters: [Filter] = [], zoneID: ZoneID? = nil,
                firesOn: Set<Event> = Set(Event.allCases), firesOnce: Bool = false, notificationInfo: NotificationInfo = .init()) {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.recordType = recordType
        self.filters = filters
        self.zoneID = zoneID
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.notificationInfo = notificationInfo
    }

    /// A query subscription on a record type.
    public static func query(_ id: String, recordType: String, filters: [Filter] = [], firesOn: Set<Event> = Set(Event.allCases),
                             notificationInfo: NotificationInfo = .init()) -> Subscription {
        Subscription(subscriptionID: id, kind: .query, recordType: recordType, filters: filters, firesOn: firesOn,
                     notificationInfo: notificationInfo)
    }

    /// What a notification shows (`notificationInfo`); an alert is sent when any of title, body,
    /// localization key or sound is set.
    public struct NotificationInfo: Sendable, Hashable {
        public var title: String?
        public var alertBody: String?
        public var alertLocalizationKey: String?
        public var soundName: String?
        public var shouldBadge: Bool
        public var shouldSendContentAvailable: Bool
        public var desiredKeys: [String]?

        public init(title: String? = nil, alertBody: String? = nil, alertLocalizationKey: String? = nil, soundName: String? = nil,
                    shouldBadge: Bool = false, shouldSendContentAvailable: Bool = false, desiredKeys: [String]? = nil) {
            self.title = title
            self.alertBody = alertBody
            self.alertLocalizationKey = alertLocalizationKey
            self.soundName = soundName
            self.shouldBadge = shouldBadge
            self.shouldSendContentAvailable = shouldSendContentAvailable
            self.desiredKeys = desiredKeys
        }
    }

    func wireSubscription() -> JSONObject {
        var object: JSONObject = ["subscriptionID": .string(subscriptionID), "subscriptionType": .string(kind.rawValue),
                                  "firesOn": JSON.strings(Event.allCases.filter(firesOn.contains).map(\.rawValue))]
        if firesOnce { object["firesOnce"] = true }
        if let recordType {
            var query: JSONObject = ["recordType": .string(recordType)]
            if !filters.isEmpty { query["filterBy"] = .array(filters.map { .object($0.wireFilter()) }) }
            object["query"] = .object(query)
        }
        if let zoneID { object["zoneID"] = JSON.zoneID(zoneID) }
        var info = JSONObject()
        let n = notificationInfo
        if let v = n.title { info["title"] = .string(v) }
        if let v = n.alertBody { info["alertBody"] = .string(v) }
        if let v = n.alertLocalizationKey { info["alertLocalizationKey"] = .string(v) }
        if let v = n.soundName { info["soundName"] = .string(v) }
        if n.shouldBadge { info["shouldBadge"] = true }
        if n.shouldSendContentAvailable { info["shouldSendContentAvailable"] = true }
        if let v = n.desiredKeys { info["desiredKeys"] = JSON.strings(v) }
        object["notificationInfo"] = .object(info)
        return object
    }

    static func fromWire(_ object: JSONObject) throws -> Subscription {
        guard let id = JSON.string(object["subscriptionID"]),
              let kind = Kind(rawValue: JSON.string(object["subscriptionType"]) ?? "") else {
            throw JSON.bad("A subscription has no subscriptionID or type")
        }
        let query = JSON.object(object["query"])
        let filters = try (JSON.array(query?["filterBy"]) ?? []).map { item -> Filter in
            guard let f = JSON.object(item), let name = JSON.string(f["fieldName"]),
                  let comparator = Filter.Comparator(rawValue: JSON.string(f["comparator"]) ?? ""),
                  let value = try Filter.valueFromWire(f["fieldValue"]) else {
                throw JSON.bad("A subscription filter is malformed")
            }
            var filter = Filter(name, comparator, value)
            // The server answers a subscription's query as it was sent: a value sent untyped comes back so.
            filter.typedBySchema = JSON.object(f["fieldValue"])?["type"] == nil
            return filter
        }
        let firesOn = Set((JSON.array(object["firesOn"]) ?? []).compactMap { JSON.string($0).flatMap(Event.init(rawValue:)) })
        let info = JSON.object(object["notificationInfo"]) ?? [:]
        let notificationInfo = NotificationInfo(
            title: JSON.string(info["title"]), alertBody: JSON.string(info["alertBody"]),
            alertLocalizationKey: JSON.string(info["alertLocalizationKey"]), soundName: JSON.string(info["soundName"]),
            shouldBadge: JSON.bool(info["shouldBadge"]) ?? false,
            shouldSendContentAvailable: JSON.bool(info["shouldSendContentAvailable"]) ?? false,
            desiredKeys: JSON.array(info["desiredKeys"])?.compactMap(JSON.string))
        return Subscription(subscriptionID: id, kind: kind, recordType: JSON.string(query?["recordType"]), filters: filters,
                            zoneID: JSON.string(JSON.object(object["zoneID"])?["zoneName"]).map(ZoneID.init),
                            firesOn: firesOn.isEmpty ? Set(Event.allCases) : firesOn,
                            firesOnce: JSON.bool(object["firesOnce"]) ?? false, notificationInfo: notificationInfo)
    }
}
