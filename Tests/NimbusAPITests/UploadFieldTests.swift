import NimbusCore
import Testing

/// `assets/upload` hands out upload URLs for ASSETID fields only (issue 16): a field the schema
/// types otherwise is refused in both environments; in production so is a type or field it lacks,
/// with a reason that says whether to deploy it or which deployed name was meant.
@Suite struct UploadFieldTests {
    private static func uploads(_ recordType: String, _ fieldName: String) -> String {
        #"{"tokens":[{"recordType":"\#(recordType)","fieldName":"\#(fieldName)"}]}"#
    }

    private func production(_ api: APIFixture, _ operation: String, token: String, _ body: String) async -> Answer {
        await api.send("POST", "/database/1/\(api.container)/production/private/\(operation)", token: token, body: body)
    }

    @Test func aFieldTypedOtherThanASSETIDGetsNoUploadURL() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let saved = await api.database("records/modify", token: token,
                #"{"operations":[{"operationType":"create","record":{"recordName":"p1","recordType":"Photo","fields":{"title":{"value":"x"}}}}]}"#)
            #expect(saved.status == 200 && saved.items("records").first?["serverErrorCode"] == nil, "\(saved)")
            let refused = await api.database("assets/upload", token: token, Self.uploads("Photo", "title"))
            #expect(refused.status == 400 && refused.serverErrorCode == "BAD_REQUEST", "\(refused)")
            #expect(refused.reason == "Field title of Photo is STRING, not ASSETID; upload URLs are only for ASSETID "
                + "(or ASSETID_LIST) fields. Store small values in the field itself.")
            // Development learns unknown types and fields when the record is saved.
            #expect(await api.database("assets/upload", token: token, Self.uploads("Photo", "image")).status == 200)
            #expect(await api.database("assets/upload", token: token, Self.uploads("Video", "clip")).status == 200)
        }
    }

    @Test func productionRefusesUnknownTypesAndFieldsSayingWhatWasMeant() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            var photo = RecordTypeSchema(name: "Photo", fields: ["image": .assetID, "title": .string])
            try await api.database.store.schemas.importSchema(ContainerSchema(container: api.container, recordTypes: ["Photo": photo]),
                                                              environment: .production)
            photo.fields["thumbnail"] = .assetID
            let development = ContainerSchema(container: api.container, recordTypes: ["Photo": photo, "Video": RecordTypeSchema(name: "Video")])
            try await api.database.store.schemas.importSchema(development, environment: .development)

            #expect(await production(api, "assets/upload", token: token, Self.uploads("Photo", "image")).status == 200)
            let cases: [(String, String, String)] = [
                ("Video", "clip", "Record type Video exists in development but is not deployed to production; "
                    + "deploy it with `nimbus schema deploy iCloud.test.App` (or the admin console's Schema page)."),
                ("Phto", "image", "Record type \"Phto\" does not exist in iCloud.test.App (in production or development); did you mean Photo?"),
                ("Photo", "thumbnail", "Field thumbnail of Photo exists in development but is not deployed to production; "
                    + "deploy it with `nimbus schema deploy iCloud.test.App`."),
                ("Photo", "imag", "Field \"imag\" of Photo does not exist in iCloud.test.App; did you mean image?"),
            ]
            for (recordType, fieldName, reason) in cases {
                let refused = await production(api, "assets/upload", token: token, Self.uploads(recordType, fieldName))
                #expect(refused.status == 400 && refused.serverErrorCode == "BAD_REQUEST", "\(recordType).\(fieldName): \(refused)")
                #expect(refused.reason == reason + " Upload URLs are only for ASSETID (or ASSETID_LIST) fields.", "\(refused)")
            }
            let string = await production(api, "assets/upload", token: token, Self.uploads("Photo", "title"))
            #expect(string.status == 400 && string.reason.hasPrefix("Field title of Photo is STRING, not ASSETID"), "\(string)")
        }
    }
}
