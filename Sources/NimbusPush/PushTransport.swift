/// Where the sender hands one push: APNs directly (`APNsClient`) or the publisher's relay.
package protocol PushTransport: Sendable {
    func send(_ request: APNsRequest) async throws -> APNsResponse
    func shutdown()
}

extension APNsClient: PushTransport {}
