/// The OpenAPI 3.1 description of every route, served at `GET /openapi.json`: the resource
/// `Resources/openapi.json`, embedded in the binary (SwiftPM `.embedInCode`) so that an installed
/// binary needs no resource files. Kept true by OpenAPIDocumentTests (every routed path appears,
/// and only those; every `maxItems`/`maximum` names its limit with `x-nimbus-limit` and equals its
/// default) and by Tests/soak/schemathesis.sh (requests and answers conform). Edit the JSON file.
package enum OpenAPIDocument {
    package static let json = String(decoding: PackageResources.openapi_json, as: UTF8.self)
}
