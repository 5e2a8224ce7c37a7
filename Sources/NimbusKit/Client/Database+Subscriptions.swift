import Foundation

extension Database {
    /// `GET subscriptions/list`.
    public func subscriptions() async throws -> [Subscription] {
        let answer = try await transport.get(url("subscriptions/list"))
        return try (JSON.array(answer["subscriptions"]) ?? []).map { item in
            guard let object = JSON.object(item) else { throw JSON.bad("A subscription is not an object") }
            return try Subscription.fromWire(object)
        }
    }

    /// `subscriptions/lookup`: a missing subscription is an `unknownItem` item.
    public func lookupSubscriptions(_ ids: [String]) async throws -> [Result<Subscription, NimbusError>] {
        let body: JSONObject = ["subscriptions": .array(ids.map { ["subscriptionID": .string($0)] })]
        let answer = try await transport.post(url("subscriptions/lookup"), body: body)
        return try subscriptionResults(answer, names: ids).map { result in
            result.flatMap { item in
                guard let item else { return .failure(NimbusError(.unknownItem, reason: "No such subscription")) }
                return .success(item)
            }
        }
    }

    /// `subscriptions/modify`: saves (creating or updating) and deletes.
    public func modifySubscriptions(saving: [Subscription] = [], deleting: [String] = []) async throws
        -> [Result<Subscription?, NimbusError>] {
        // `create` saves whether or not the subscription exists (docs/api.md); `update` would need it to.
        var operations: [JSONValue] = saving.map { subscription in
            ["operationType": "create", "subscription": .object(subscription.wireSubscription())]
        }
        operations += deleting.map { ["operationType": "delete", "subscription": ["subscriptionID": .string($0)]] }
        guard !operations.isEmpty else { return [] }
        let answer = try await transport.post(url("subscriptions/modify"), body: ["operations": .array(operations)])
        return try subscriptionResults(answer, names: saving.map(\.subscriptionID) + deleting)
    }

    /// Saves one subscription and returns it as the server stored it.
    public func save(_ subscription: Subscription) async throws -> Subscription {
        guard let saved = try await modifySubscriptions(saving: [subscription])[0].get() else {
            throw JSON.bad("subscriptions/modify answered a save as a delete")
        }
        return saved
    }

    /// Deletes one subscription (`unknownItem` when it does not exist).
    public func deleteSubscription(_ id: String) async throws {
        _ = try await modifySubscriptions(deleting: [id])[0].get()
    }

    private func subscriptionResults(_ answer: JSONObject, names: [String]) throws -> [Result<Subscription?, NimbusError>] {
        guard let items = JSON.array(answer["subscriptions"]), items.count == names.count else {
            throw JSON.bad("The subscriptions answer has another number of items than asked for")
        }
        return zip(items, names).map { item, name in
            guard let object = JSON.object(item) else { return .failure(JSON.bad("A subscription item is not an object")) }
            if object["serverErrorCode"] != nil {
                var error = NimbusError.fromWire(object, status: 200, zoneID: .default)
                if error.itemName == nil { error.itemName = name }
                return .failure(error)
            }
            if object["subscriptionType"] == nil { return .success(nil) }  // a delete's answer
            return Result { try Subscription.fromWire(object) }.mapError { $0 as? NimbusError ?? JSON.bad("\($0)") }
        }
    }
}
