import NimbusWire

extension FieldType {
    /// The wire vocabulary's type of this name (NimbusWire's `FieldType`, which the server types
    /// fields by); nil for a name the wire does not know. `isList`, `listType` and `elementType`
    /// above keep their string forms (the changes decoder calls them per field); a test holds
    /// them equal to the wire vocabulary's for every name (`FieldWireTests`).
    var wire: NimbusWire.FieldType? { NimbusWire.FieldType(name: rawValue) }

    /// The public type of a wire type.
    init(_ wire: NimbusWire.FieldType) { self.init(rawValue: wire.name) }
}

extension Reference.Action {
    /// The same action in the wire vocabulary (NimbusWire's `ReferenceAction`).
    var wire: ReferenceAction {
        switch self {
        case .none: .none
        case .deleteSelf: .deleteSelf
        }
    }
}
