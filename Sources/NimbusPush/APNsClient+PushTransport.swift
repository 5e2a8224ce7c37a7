/// `APNsClient` is the direct transport: `send` and `shutdown` are its own.
extension APNsClient: PushTransport {}
