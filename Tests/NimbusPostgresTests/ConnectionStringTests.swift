import NimbusPostgres
import Testing

/// Secrets never leave a connection string shown to people, whichever form libpq took it in.
@Suite struct ConnectionStringTests {
    func expectHidden(_ text: String, _ expected: String, secret: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = ConnectionString.redacted(text)
        #expect(shown == expected, sourceLocation: sourceLocation)
        #expect(!shown.contains(secret), "\(shown) shows \(secret)", sourceLocation: sourceLocation)
    }

    @Test func hidesAURIsUserinfoPassword() {
        expectHidden("postgresql://nimbus:s3cret@db.example.org:5432/nimbus", "postgresql://nimbus:hidden@db.example.org:5432/nimbus", secret: "s3cret")
        expectHidden("postgres://nimbus:p%40ss%2Fw@db/nimbus?sslmode=require", "postgres://nimbus:hidden@db/nimbus?sslmode=require", secret: "p%40ss")
        expectHidden("postgresql://u:pw@h1:5432,h2:5433/db", "postgresql://u:hidden@h1:5432,h2:5433/db", secret: "pw@")
        expectHidden("postgresql://u:p@ss@host/db", "postgresql://u:hidden@host/db", secret: "p@ss")
        expectHidden("postgresql://u:@host/db", "postgresql://u:hidden@host/db", secret: "u:@")
    }

    @Test func hidesPasswordQueryParametersWhereverTheyStand() {
        expectHidden("postgresql:///nimbus?host=/run/pg&password=s3cret", "postgresql:///nimbus?host=/run/pg&password=hidden", secret: "s3cret")
        expectHidden("postgresql://db/nimbus?password=s3cret&user=nimbus", "postgresql://db/nimbus?password=hidden&user=nimbus", secret: "s3cret")
        expectHidden("postgresql://db/n?pass%77ord=s3cret", "postgresql://db/n?pass%77ord=hidden", secret: "s3cret")
        expectHidden("postgresql://db/n?%70%61%73%73%77%6F%72%64=s%33cret", "postgresql://db/n?%70%61%73%73%77%6F%72%64=hidden", secret: "s%33cret")
        expectHidden("postgresql://db/n?PASSWORD=s3cret", "postgresql://db/n?PASSWORD=hidden", secret: "s3cret")
        expectHidden("postgresql://db/n?sslpassword=keypass&sslmode=verify-full", "postgresql://db/n?sslpassword=hidden&sslmode=verify-full", secret: "keypass")
        expectHidden("postgresql://u:one@db/n?password=two", "postgresql://u:hidden@db/n?password=hidden", secret: "one")
        #expect(!ConnectionString.redacted("postgresql://u:one@db/n?password=two").contains("two"))
    }

    @Test func hidesPasswordsInKeywordValueStrings() {
        expectHidden("host=db user=nimbus password=s3cret dbname=nimbus", "host=db user=nimbus password=hidden dbname=nimbus", secret: "s3cret")
        expectHidden("host=db password = 's3 cret' dbname=nimbus", "host=db password = 'hidden' dbname=nimbus", secret: "s3 cret")
        expectHidden(#"password='it\'s secret' host=db"#, "password='hidden' host=db", secret: "secret")
        expectHidden(#"password=back\ slash host=db"#, "password=hidden host=db", secret: "slash")
        expectHidden("host=db sslpassword=keypass", "host=db sslpassword=hidden", secret: "keypass")
        expectHidden("host=db application_name=a://b password=s3cret", "host=db application_name=a://b password=hidden", secret: "s3cret")
        expectHidden("\tpassword=s3cret\n", "\tpassword=hidden\n", secret: "s3cret")
    }

    @Test func keepsWhatHoldsNoSecretAndHidesWhatDoesNotParse() {
        for text in ["postgresql:///nimbus?host=/tmp/pg&user=nimbus", "postgresql://nimbus@db:5432/nimbus", "host=db user=nimbus", "nimbus", ""] {
            #expect(ConnectionString.redacted(text) == text)
        }
        expectHidden("host=db password='unterminated s3cret", "hidden", secret: "s3cret")
        expectHidden("host=db s3cret", "hidden", secret: "s3cret")
    }
}
