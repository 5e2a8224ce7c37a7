import NimbusSupport
/// A subscription (docs/api.md "Subscriptions and notifications"): what to notify about, and how.
package struct Subscription: Sendable, Hashable {
    package enum Kind: String, Sendable, CaseIterable {
        case query, zone, database
    }

    package enum Trigger: String, Sendable, CaseIterable {
        case create, update, delete

        /// The notification `reason` for a change of this kind.
        package var reason: String {
            switch self {
            case .create: "recordCreated"
            case .update: "recordUpdated"
            case .delete: "recordDeleted"
            }
        }
    }

    package var id: String
    package var kind: Kind
    /// Query subscriptions: the record type and filters (sort and limits are ignored).
    package var query: RecordQuery?
    /// The zone it covers; nil for database subscriptions and zone-less query subscriptions.
    package var zoneName: String?
    package var firesOn: Set<Trigger>
    package var firesOnce: Bool
    /// `notificationInfo` as sent (known members only).
    package var notificationInfo: JSONObject
    /// The `query` object as sent, kept for answering and for re-typing its filters.
    package var queryJSON: JSONValue?

    /// Parses a subscription object; `schema` types filter values sent without a type.
    package static func parse(_ json: JSONValue, schema: [String: RecordTypeSchema], limits: Limits) throws(SyncError) -> Subscription {
        func fail(_ reason: String) -> SyncError { SyncError(.badRequest, reason) }
        guard case .object(let object) = json else { throw fail("A subscription must be an object.") }
        guard case .string(let id)? = object["subscriptionID"], Names.isValidRecordName(id) else {
            throw fail("subscriptionID must be 1–255 letters, digits, '-', '_', '.', ':'.")
        }
        // The query and notificationInfo are stored as sent (jsonb).
        guard !json.containsNUL else { throw fail("Subscription \(id) contains U+0000, which cannot be stored.") }
        guard case .string(let kindText)? = object["subscriptionType"], let kind = Kind(rawValue: kindText) else {
            throw fail("subscriptionType of \(id) must be query, zone or database.")
        }
        var subscription = Subscription(id: id, kind: kind, query: nil, zoneName: nil,
                                        firesOn: Set(Trigger.allCases), firesOnce: false, notificationInfo: [:], queryJSON: nil)
        if let zone = object["zoneID"], !zone.isNull {
            guard case .string(let name)? = zone["zoneName"], Names.isValidZoneName(name) else {
                throw fail("zoneID of \(id) must be {\"zoneName\": \"...\"} with a valid name.")
            }
            guard kind != .database else { throw fail("A database subscription (\(id)) covers every zone; it takes no zoneID.") }
            subscription.zoneName = name
        } else if kind == .zone {
            throw fail("Zone subscription \(id) needs a zoneID.")
        }
        if kind == .query {
            guard let queryValue = object["query"], case .object = queryValue else {
                throw fail("Query subscription \(id) needs a query {\"recordType\", \"filterBy\"}.")
            }
            subscription.query = try RecordQuery.parse(.object(["query": queryValue]), schema: schema, limits: limits)
            subscription.queryJSON = queryValue
        }
        if let fires = object["firesOn"], !fires.isNull {
            guard case .array(let values) = fires, !values.isEmpty else { throw fail("firesOn of \(id) must list create, update and/or delete.") }
            var triggers = Set<Trigger>()
            for value in values {
                guard case .string(let text) = value, let trigger = Trigger(rawValue: text) else {
                    throw fail("firesOn of \(id) must list create, update and/or delete.")
                }
                triggers.insert(trigger)
            }
            subscription.firesOn = triggers
        }
        if let once = object["firesOnce"], !once.isNull {
            guard case .bool(let flag) = once else { throw fail("firesOnce of \(id) must be true or false.") }
            subscription.firesOnce = flag
        }
        if let info = object["notificationInfo"], !info.isNull {
            guard case .object(let infoObject) = info else { throw fail("notificationInfo of \(id) must be an object.") }
            for (key, value) in infoObject {
                switch key {
                case "title", "alertBody", "alertLocalizationKey", "soundName":
                    guard case .string(let text) = value, !text.containsNUL, text.utf8.count <= 4096 else {
                        throw fail("notificationInfo.\(key) of \(id) must be a string of at most 4096 bytes without U+0000.")
                    }
                case "shouldBadge", "shouldSendContentAvailable":
                    guard case .bool = value else { throw fail("notificationInfo.\(key) of \(id) must be true or false.") }
                case "desiredKeys":
                    guard RecordOperation.parseDesiredKeys(value) != nil else { throw fail("notificationInfo.desiredKeys of \(id) must be an array of field names.") }
                default:
                    continue  // unknown members are dropped, as CloudKit ignores them
                }
                subscription.notificationInfo[key] = value
            }
        }
        return subscription
    }

    /// The subscription object answered by list/lookup/modify.
    package var json: JSONValue {
        var object: JSONObject = ["subscriptionID": .string(id), "subscriptionType": .string(kind.rawValue)]
        if let queryJSON { object["query"] = queryJSON }
        if let zoneName { object["zoneID"] = .object(["zoneName": .string(zoneName)]) }
        object["firesOn"] = .array(Trigger.allCases.filter(firesOn.contains).map { .string($0.rawValue) })
        object["firesOnce"] = .bool(firesOnce)
        object["notificationInfo"] = .object(notificationInfo)
        return .object(object)
    }

    /// Whether a change of `record` (as it is for creates and updates, as it was for deletes) in
    /// zone `zoneName` fires this subscription.
    package func fires(on trigger: Trigger, record: Record, zoneName: String) -> Bool {
        guard firesOn.contains(trigger) else { return false }
        switch kind {
        case .database: return true
        case .zone: return self.zoneName == zoneName
        case .query:
            if let zone = self.zoneName, zone != zoneName { return false }
            return query?.matches(record) ?? false
        }
    }

    /// The notification for a change (docs/api.md notification shape, without its id and cursor).
    package func notification(id notificationID: String, trigger: Trigger, record: Record, zoneName: String) -> JSONValue {
        var object: JSONObject = [
            "notificationID": .string(notificationID),
            "subscriptionID": .string(id),
            "notificationType": .string(kind.rawValue),
            "reason": .string(trigger.reason),
            "recordName": .string(record.recordName),
            "recordType": .string(record.recordType),
            "zoneID": .object(["zoneName": .string(zoneName)]),
        ]
        var alert = JSONObject()
        if let title = notificationInfo["title"] { alert["title"] = title }
        if let body = notificationInfo["alertBody"] { alert["body"] = body }
        if let key = notificationInfo["alertLocalizationKey"] { alert["localizationKey"] = key }
        if let sound = notificationInfo["soundName"] { alert["soundName"] = sound }
        if !alert.isEmpty { object["alert"] = .object(alert) }
        object["contentAvailable"] = .bool(notificationInfo["shouldSendContentAvailable"]?.boolValue ?? false)
        if let keys = notificationInfo["desiredKeys"].flatMap(RecordOperation.parseDesiredKeys), !keys.isEmpty {
            var fields = JSONObject()
            for name in keys.sorted() {
                if let value = record.fields[name] {
                    fields[name] = .object(["value": value.json, "type": .string(value.type.name)])
                }
            }
            object["fields"] = .object(fields)
        }
        return .object(object)
    }
}
