// Where Combine is missing (Linux), the app's `ObservableObject` and `@Published` lines compile
// against these stand-ins; on Apple platforms Combine's own are used. This is the "Combine
// guards" change of docs/client.md, kept out of CloudKitManager.swift.
#if !canImport(Combine)
protocol ObservableObject: AnyObject {}

@propertyWrapper
struct Published<Value> {
    var wrappedValue: Value
    init(wrappedValue: Value) { self.wrappedValue = wrappedValue }
}
#endif
