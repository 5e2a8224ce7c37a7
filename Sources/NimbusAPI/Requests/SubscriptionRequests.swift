import NimbusCore
import NimbusSupport
import NimbusStore

/// `subscriptions/lookup`: subscription ids, in order.
struct LookupSubscriptionsRequest: JSONBodyRequest {
    var ids: [String]

    init(body: JSONValue, limits: Limits) throws {
        let entries = try RequestFields.entries(body, "subscriptions", verb: "names",
                                                missing: "subscriptions/lookup needs a \"subscriptions\" array of {\"subscriptionID\"}.", limits: limits)
        ids = try entries.map { entry in
            guard case .string(let id)? = entry["subscriptionID"] else {
                throw SyncError(.badRequest, "Each element of subscriptions must be {\"subscriptionID\": \"...\"}.")
            }
            return id
        }
    }
}

/// `subscriptions/modify`: deletes are decoded at once; saves once the schema that checks their
/// record types and fields is known.
struct ModifySubscriptionsRequest: JSONBodyRequest {
    enum Entry: Sendable {
        case run(SubscriptionOperation)
        case refused(subscriptionID: String, ItemError)
    }

    private enum Pending: Sendable {
        case decided(Entry)
        case save(JSONValue, mustExist: Bool)
    }

    private let pending: [Pending]
    private let limits: Limits

    init(body: JSONValue, limits: Limits) throws {
        let entries = try RequestFields.entries(body, "operations", verb: "has", missing: "subscriptions/modify needs an \"operations\" array.",
                                                limits: limits)
        pending = entries.map(Self.pending)
        self.limits = limits
    }

    /// Every operation to run or refuse, in order, checked against `schema`.
    func entries(schema: [String: RecordTypeSchema]) -> [Entry] {
        pending.map { pending in
            switch pending {
            case .decided(let entry):
                return entry
            case .save(let json, let mustExist):
                do throws(SyncError) {
                    return .run(.save(try Subscription.parse(json, schema: schema, limits: limits), mustExist: mustExist))
                } catch {
                    return .refused(subscriptionID: json["subscriptionID"]?.stringValue ?? "", ItemError(error.code, error.reason))
                }
            }
        }
    }

    private static func pending(_ json: JSONValue) -> Pending {
        let subscription = json["subscription"] ?? .null
        let id = subscription["subscriptionID"]?.stringValue ?? ""
        guard case .string(let kind)? = json["operationType"], ["create", "update", "delete"].contains(kind) else {
            return .decided(.refused(subscriptionID: id, ItemError(.badRequest, "operationType must be create, update or delete.")))
        }
        guard kind == "delete" else { return .save(subscription, mustExist: kind == "update") }
        guard Names.isValidRecordName(id) else {
            return .decided(.refused(subscriptionID: id, ItemError(.badRequest, "A delete needs subscription.subscriptionID.")))
        }
        return .decided(.run(.delete(id)))
    }
}
