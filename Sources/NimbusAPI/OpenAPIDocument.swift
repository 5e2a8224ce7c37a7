// The OpenAPI 3.1 description of every route, served at GET /openapi.json.
// Kept true by OpenAPIDocumentTests (every routed path appears here, and only those) and by
// Tests/soak/schemathesis.sh (requests and answers conform). Edit the JSON below directly.

/// The OpenAPI document, embedded so that an installed binary needs no resource files.
package enum OpenAPIDocument {
    package static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "Nimbus",
    "version": "1",
    "description": "A self-hosted CloudKit-style sync server: CloudKit Web Services' JSON shapes over HTTP/1.1 (see docs/api.md). Every answer carries Date. Errors have the shape of Error; per-item errors inside 200 answers that of ItemError. HTTP-level faults (bad request line, headers too large, bad chunking, timeouts) answer 400/408/413/414/431/501/505 with the Error shape and close the connection. HEAD is served wherever GET is.",
    "license": {
      "name": "Proprietary",
      "identifier": "LicenseRef-Nimbus"
    }
  },
  "security": [
    {
      "bearerAuth": []
    }
  ],
  "tags": [
    {
      "name": "system"
    },
    {
      "name": "records"
    },
    {
      "name": "zones"
    },
    {
      "name": "users"
    },
    {
      "name": "subscriptions"
    },
    {
      "name": "tokens"
    },
    {
      "name": "assets"
    }
  ],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "healthz",
        "tags": [
          "system"
        ],
        "summary": "Liveness and database round trip",
        "security": [],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "status",
                    "database"
                  ],
                  "properties": {
                    "status": {
                      "const": "ok"
                    },
                    "database": {
                      "type": "object",
                      "required": [
                        "roundTripMs"
                      ],
                      "properties": {
                        "roundTripMs": {
                          "type": "number",
                          "minimum": 0
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/limits": {
      "get": {
        "operationId": "limits",
        "tags": [
          "system"
        ],
        "summary": "Every limit with its configured value",
        "security": [],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Limits"
                }
              }
            }
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "tags": [
          "system"
        ],
        "summary": "Prometheus text exposition",
        "security": [],
        "responses": {
          "200": {
            "description": "Counters and histograms per route, method and status.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openapi",
        "tags": [
          "system"
        ],
        "summary": "This document",
        "security": [],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "openapi",
                    "paths"
                  ]
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/records/modify": {
      "post": {
        "operationId": "records_modify",
        "tags": [
          "records"
        ],
        "summary": "Create, update, replace and delete records",
        "description": "One operation per record per request (two on one record is a request-level BAD_REQUEST); at most maxOperationsPerRequest (400) operations; `atomic: true` is all or nothing. Answers in request order: a saved record, `{recordName, deleted: true}`, or an item error (CONFLICT with serverRecord, EXISTS, NOT_FOUND, ACCESS_DENIED, VALIDATING_REFERENCE_ERROR, ATOMIC_ERROR, BAD_REQUEST).",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "records"
                  ],
                  "properties": {
                    "records": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/Record"
                          },
                          {
                            "$ref": "#/components/schemas/DeletedRecord"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            },
            "links": {
              "LookupSavedRecord": {
                "operationId": "records_lookup",
                "parameters": {
                  "container": "$request.path.container",
                  "environment": "$request.path.environment",
                  "database": "$request.path.database"
                },
                "requestBody": {
                  "records": [
                    {
                      "recordName": "$response.body#/records/0/recordName"
                    }
                  ]
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "operations"
                ],
                "properties": {
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneIDParameter"
                  },
                  "operations": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "anyOf": [
                        {
                          "$ref": "#/components/schemas/RecordOperation"
                        },
                        {
                          "$ref": "#/components/schemas/ItemLevel"
                        }
                      ]
                    }
                  },
                  "atomic": {
                    "anyOf": [
                      {
                        "type": "boolean"
                      },
                      {
                        "type": "null"
                      }
                    ]
                  },
                  "desiredKeys": {
                    "$ref": "#/components/schemas/DesiredKeys"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/records/lookup": {
      "post": {
        "operationId": "records_lookup",
        "tags": [
          "records"
        ],
        "summary": "Fetch records by name",
        "description": "A missing record is a NOT_FOUND item, an invalid name a BAD_REQUEST item.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "records"
                  ],
                  "properties": {
                    "records": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/Record"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "records"
                ],
                "properties": {
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneIDParameter"
                  },
                  "records": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "type": "object",
                      "required": [
                        "recordName"
                      ],
                      "properties": {
                        "recordName": {
                          "type": "string"
                        }
                      }
                    }
                  },
                  "desiredKeys": {
                    "$ref": "#/components/schemas/DesiredKeys"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/records/query": {
      "post": {
        "operationId": "records_query",
        "tags": [
          "records"
        ],
        "summary": "Query records of one type",
        "description": "Filters are ANDed; without sortBy results come by recordName. An unknown record type gives no records in development and BAD_REQUEST in production. Continuation markers stay correct while records are inserted or deleted between pages.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "records"
                  ],
                  "properties": {
                    "records": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Record"
                      }
                    },
                    "continuationMarker": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "query"
                ],
                "properties": {
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneIDParameter"
                  },
                  "query": {
                    "$ref": "#/components/schemas/Query"
                  },
                  "resultsLimit": {
                    "$ref": "#/components/schemas/ResultsLimit"
                  },
                  "desiredKeys": {
                    "$ref": "#/components/schemas/DesiredKeys"
                  },
                  "continuationMarker": {
                    "anyOf": [
                      {
                        "type": "string",
                        "minLength": 1
                      },
                      {
                        "type": "null"
                      }
                    ]
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/records/changes": {
      "post": {
        "operationId": "records_changes",
        "tags": [
          "records"
        ],
        "summary": "Changes of one zone since a token",
        "description": "No token = from the beginning (tombstones omitted). Each record appears once per answer in its latest state; loop while moreComing. (Nimbus) `wait` holds the request until a change commits or the wait ends (then no records and the request's token).",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "zoneID",
                    "records",
                    "syncToken",
                    "moreComing"
                  ],
                  "properties": {
                    "zoneID": {
                      "$ref": "#/components/schemas/ZoneID"
                    },
                    "records": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/Record"
                          },
                          {
                            "$ref": "#/components/schemas/Tombstone"
                          }
                        ]
                      }
                    },
                    "syncToken": {
                      "type": "string"
                    },
                    "moreComing": {
                      "type": "boolean"
                    }
                  }
                }
              }
            },
            "links": {
              "NextPage": {
                "operationId": "records_changes",
                "parameters": {
                  "container": "$request.path.container",
                  "environment": "$request.path.environment",
                  "database": "$request.path.database"
                },
                "requestBody": {
                  "zoneID": "$response.body#/zoneID",
                  "syncToken": "$response.body#/syncToken"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "410": {
            "$ref": "#/components/responses/Gone"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "zoneID"
                ],
                "properties": {
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneID"
                  },
                  "syncToken": {
                    "$ref": "#/components/schemas/SyncToken"
                  },
                  "resultsLimit": {
                    "$ref": "#/components/schemas/ResultsLimit"
                  },
                  "desiredKeys": {
                    "$ref": "#/components/schemas/DesiredKeys"
                  },
                  "desiredRecordTypes": {
                    "anyOf": [
                      {
                        "type": "array",
                        "items": {
                          "type": "string",
                          "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
                        }
                      },
                      {
                        "type": "null"
                      }
                    ]
                  },
                  "wait": {
                    "$ref": "#/components/schemas/Wait"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/list": {
      "get": {
        "operationId": "zones_list",
        "tags": [
          "zones"
        ],
        "summary": "Every zone of the database",
        "description": "Each zone with its current records/changes token.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "zones"
                  ],
                  "properties": {
                    "zones": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/ZoneSummary"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/lookup": {
      "post": {
        "operationId": "zones_lookup",
        "tags": [
          "zones"
        ],
        "summary": "Fetch zones by name",
        "description": "A missing zone is a ZONE_NOT_FOUND item. Elements may be `{zoneName}` or `{zoneID: {zoneName}}`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "zones"
                  ],
                  "properties": {
                    "zones": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/ZoneSummary"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "zones"
                ],
                "properties": {
                  "zones": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "anyOf": [
                        {
                          "type": "object",
                          "required": [
                            "zoneName"
                          ],
                          "properties": {
                            "zoneName": {
                              "type": "string"
                            }
                          }
                        },
                        {
                          "type": "object",
                          "required": [
                            "zoneID"
                          ],
                          "properties": {
                            "zoneID": {
                              "type": "object",
                              "required": [
                                "zoneName"
                              ],
                              "properties": {
                                "zoneName": {
                                  "type": "string"
                                }
                              }
                            }
                          }
                        }
                      ]
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/modify": {
      "post": {
        "operationId": "zones_modify",
        "tags": [
          "zones"
        ],
        "summary": "Create and delete zones",
        "description": "Creating an existing zone succeeds and returns it; deleting a zone deletes its records and asset references.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "zones"
                  ],
                  "properties": {
                    "zones": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/ZoneSummary"
                          },
                          {
                            "$ref": "#/components/schemas/DeletedZone"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "operations"
                ],
                "properties": {
                  "operations": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "anyOf": [
                        {
                          "$ref": "#/components/schemas/ZoneOperation"
                        },
                        {
                          "$ref": "#/components/schemas/ItemLevel"
                        }
                      ]
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/zones/changes": {
      "post": {
        "operationId": "zones_changes",
        "tags": [
          "zones"
        ],
        "summary": "Zones changed since a database token",
        "description": "`wait` as in records/changes.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "zones",
                    "syncToken",
                    "moreComing"
                  ],
                  "properties": {
                    "zones": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/ZoneSummary"
                          },
                          {
                            "$ref": "#/components/schemas/DeletedZone"
                          }
                        ]
                      }
                    },
                    "syncToken": {
                      "type": "string"
                    },
                    "moreComing": {
                      "type": "boolean"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "410": {
            "$ref": "#/components/responses/Gone"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "properties": {
                  "syncToken": {
                    "$ref": "#/components/schemas/SyncToken"
                  },
                  "resultsLimit": {
                    "$ref": "#/components/schemas/ResultsLimit"
                  },
                  "wait": {
                    "$ref": "#/components/schemas/Wait"
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/users/current": {
      "get": {
        "operationId": "users_current",
        "tags": [
          "users"
        ],
        "summary": "The token's user",
        "description": "",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "userRecordName"
                  ],
                  "properties": {
                    "userRecordName": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/subscriptions/list": {
      "get": {
        "operationId": "subscriptions_list",
        "tags": [
          "subscriptions"
        ],
        "summary": "Every subscription of the database",
        "description": "",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscriptions"
                  ],
                  "properties": {
                    "subscriptions": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Subscription"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/subscriptions/lookup": {
      "post": {
        "operationId": "subscriptions_lookup",
        "tags": [
          "subscriptions"
        ],
        "summary": "Fetch subscriptions by id",
        "description": "A missing subscription is a NOT_FOUND item.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscriptions"
                  ],
                  "properties": {
                    "subscriptions": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/Subscription"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "subscriptions"
                ],
                "properties": {
                  "subscriptions": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "type": "object",
                      "required": [
                        "subscriptionID"
                      ],
                      "properties": {
                        "subscriptionID": {
                          "type": "string"
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/subscriptions/modify": {
      "post": {
        "operationId": "subscriptions_modify",
        "tags": [
          "subscriptions"
        ],
        "summary": "Create, update and delete subscriptions",
        "description": "A malformed subscription is a BAD_REQUEST item; updating or deleting a missing one a NOT_FOUND item.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscriptions"
                  ],
                  "properties": {
                    "subscriptions": {
                      "type": "array",
                      "items": {
                        "anyOf": [
                          {
                            "$ref": "#/components/schemas/Subscription"
                          },
                          {
                            "$ref": "#/components/schemas/DeletedSubscription"
                          },
                          {
                            "$ref": "#/components/schemas/ItemError"
                          }
                        ]
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "operations"
                ],
                "properties": {
                  "operations": {
                    "type": "array",
                    "maxItems": 400,
                    "items": {
                      "anyOf": [
                        {
                          "$ref": "#/components/schemas/SubscriptionOperation"
                        },
                        {
                          "$ref": "#/components/schemas/ItemLevel"
                        }
                      ]
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/tokens/create": {
      "post": {
        "operationId": "tokens_create",
        "tags": [
          "tokens"
        ],
        "summary": "The notification channel of this database",
        "description": "Long-poll instead of push: poll `webcourierURL` with the bearer token of the same user.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "apnsToken",
                    "webcourierURL",
                    "cursor"
                  ],
                  "properties": {
                    "apnsToken": {
                      "type": "string",
                      "description": "The channel id."
                    },
                    "webcourierURL": {
                      "type": "string",
                      "format": "uri",
                      "description": "Absolute: from --public-url, else the request's Host."
                    },
                    "cursor": {
                      "type": "string",
                      "description": "The current position."
                    }
                  }
                }
              }
            },
            "links": {
              "Poll": {
                "operationId": "webcourier_poll",
                "parameters": {
                  "channel": "$response.body#/apnsToken",
                  "since": "$response.body#/cursor"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "type": "object"
              }
            }
          }
        }
      }
    },
    "/database/1/{container}/{environment}/{database}/assets/upload": {
      "post": {
        "operationId": "assets_upload",
        "tags": [
          "assets"
        ],
        "summary": "Upload URLs for asset fields",
        "description": "At most maxAssetTokensPerRequest (200) tokens (LIMIT_EXCEEDED above). An unknown zoneID is ZONE_NOT_FOUND.",
        "parameters": [
          {
            "$ref": "#/components/parameters/container"
          },
          {
            "$ref": "#/components/parameters/environment"
          },
          {
            "$ref": "#/components/parameters/database"
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "tokens"
                  ],
                  "properties": {
                    "tokens": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "required": [
                          "recordName",
                          "fieldName",
                          "url"
                        ],
                        "properties": {
                          "recordName": {
                            "type": "string"
                          },
                          "fieldName": {
                            "type": "string"
                          },
                          "url": {
                            "type": "string",
                            "format": "uri",
                            "description": "Absolute; POST the bytes there with the same user's bearer token. Used up by a successful upload."
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        },
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "tokens"
                ],
                "properties": {
                  "zoneID": {
                    "$ref": "#/components/schemas/ZoneIDParameter"
                  },
                  "tokens": {
                    "type": "array",
                    "maxItems": 200,
                    "items": {
                      "type": "object",
                      "required": [
                        "recordType",
                        "fieldName"
                      ],
                      "properties": {
                        "recordType": {
                          "type": "string",
                          "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
                        },
                        "fieldName": {
                          "type": "string",
                          "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
                        },
                        "recordName": {
                          "anyOf": [
                            {
                              "type": "string",
                              "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
                            },
                            {
                              "type": "null"
                            }
                          ]
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/assets/1/upload/{id}": {
      "post": {
        "operationId": "assets_upload_bytes",
        "tags": [
          "assets"
        ],
        "summary": "Upload an asset's bytes",
        "description": "Content-Length or chunked; streamed, never buffered whole. A used, unknown or another user's upload id is NOT_FOUND.",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/octet-stream": {
              "schema": {
                "type": "string",
                "format": "binary"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadedAsset"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        }
      }
    },
    "/assets/1/download/{handle}": {
      "get": {
        "operationId": "assets_download",
        "tags": [
          "assets"
        ],
        "summary": "Download an asset's bytes",
        "description": "The `downloadURL` of an ASSETID field. ETag is the checksum in double quotes; If-None-Match gives 304; one Range gives 206, several the whole body.",
        "parameters": [
          {
            "name": "handle",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "Range",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "If-None-Match",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The bytes.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "206": {
            "description": "One range of the bytes.",
            "headers": {
              "Content-Range": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "304": {
            "description": "Not modified (If-None-Match matched the ETag)."
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "416": {
            "description": "BAD_REQUEST: the range is outside the asset (Content-Range: bytes */size).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "headers": {
              "Content-Range": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          }
        }
      }
    },
    "/webcourier/1/{channel}": {
      "get": {
        "operationId": "webcourier_poll",
        "tags": [
          "subscriptions"
        ],
        "summary": "Notifications since a cursor (long-poll)",
        "description": "The `webcourierURL` of tokens/create. Needs a bearer token of the channel's user (another user gets NOT_FOUND). Never returns changes made by the polling token's own device. Replays from any cursor inside the retention window.",
        "parameters": [
          {
            "name": "channel",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "since",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string"
            },
            "description": "A cursor of this channel (BAD_REQUEST otherwise)."
          },
          {
            "name": "wait",
            "in": "query",
            "required": false,
            "schema": {
              "type": "integer",
              "minimum": 0,
              "maximum": 55
            }
          }
        ],
        "responses": {
          "200": {
            "description": "OK",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "notifications",
                    "cursor",
                    "moreComing"
                  ],
                  "properties": {
                    "notifications": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Notification"
                      }
                    },
                    "cursor": {
                      "type": "string"
                    },
                    "moreComing": {
                      "type": "boolean"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "405": {
            "$ref": "#/components/responses/MethodNotAllowed"
          },
          "429": {
            "$ref": "#/components/responses/Throttled"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "A device token issued by `nimbus token issue USER --device NAME`."
      }
    },
    "parameters": {
      "container": {
        "name": "container",
        "in": "path",
        "required": true,
        "description": "An app id such as iCloud.com.mirxa.AppLocker: letters, digits, '.', '-', '_', at most 255 (else BAD_REQUEST).",
        "schema": {
          "type": "string",
          "pattern": "^[A-Za-z0-9._-]{1,255}$"
        },
        "example": "iCloud.com.mirxa.AppLocker"
      },
      "environment": {
        "name": "environment",
        "in": "path",
        "required": true,
        "description": "Separate data per environment (else BAD_REQUEST).",
        "schema": {
          "type": "string",
          "enum": [
            "development",
            "production"
          ]
        }
      },
      "database": {
        "name": "database",
        "in": "path",
        "required": true,
        "description": "`private`, one per user (public and shared are BAD_REQUEST until they exist).",
        "schema": {
          "type": "string",
          "enum": [
            "private"
          ]
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "BAD_REQUEST: malformed JSON, a wrong field type, an invalid name, an unknown environment or database, or a rejected value.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "AUTHENTICATION_REQUIRED (no Authorization header) or AUTHENTICATION_FAILED (unknown or revoked token, or not `Bearer <token>`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "WWW-Authenticate": {
            "schema": {
              "type": "string"
            },
            "description": "`Bearer`, or `Bearer error=\"invalid_token\"` for AUTHENTICATION_FAILED."
          }
        }
      },
      "NotFound": {
        "description": "NOT_FOUND or ZONE_NOT_FOUND: an unknown path, or the zone named by the request's top-level zoneID does not exist.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "MethodNotAllowed": {
        "description": "BAD_REQUEST: the operation exists with another method (see Allow).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Allow": {
            "schema": {
              "type": "string"
            }
          }
        }
      },
      "Gone": {
        "description": "CHANGE_TOKEN_EXPIRED: the token is older than the zone's retention horizon, or from before the zone was deleted and created again; fetch again without a token.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "TooLarge": {
        "description": "LIMIT_EXCEEDED (body, record, asset or operation count over a limit; `reason` names it) or QUOTA_EXCEEDED.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Throttled": {
        "description": "THROTTLED: too many waiting requests (maxWaitersPerDevice, maxWaiters).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Retry-After": {
            "schema": {
              "type": "integer"
            },
            "description": "Seconds before a retry may succeed."
          }
        }
      },
      "Unavailable": {
        "description": "TRY_AGAIN_LATER: the database is unreachable or the server is shutting down.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "headers": {
          "Retry-After": {
            "schema": {
              "type": "integer"
            },
            "description": "Seconds before a retry may succeed."
          }
        }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "description": "A request-level error (docs/api.md \"Errors\").",
        "required": [
          "uuid",
          "serverErrorCode",
          "reason"
        ],
        "properties": {
          "uuid": {
            "type": "string",
            "format": "uuid"
          },
          "serverErrorCode": {
            "$ref": "#/components/schemas/ServerErrorCode"
          },
          "reason": {
            "type": "string",
            "description": "A sentence a user can act on."
          },
          "retryAfter": {
            "type": "integer",
            "minimum": 0,
            "description": "Seconds (THROTTLED, TRY_AGAIN_LATER); also in the Retry-After header."
          }
        }
      },
      "ServerErrorCode": {
        "type": "string",
        "enum": [
          "BAD_REQUEST",
          "AUTHENTICATION_REQUIRED",
          "AUTHENTICATION_FAILED",
          "ACCESS_DENIED",
          "NOT_FOUND",
          "ZONE_NOT_FOUND",
          "CONFLICT",
          "EXISTS",
          "CHANGE_TOKEN_EXPIRED",
          "LIMIT_EXCEEDED",
          "ATOMIC_ERROR",
          "THROTTLED",
          "VALIDATING_REFERENCE_ERROR",
          "QUOTA_EXCEEDED",
          "INTERNAL_ERROR",
          "TRY_AGAIN_LATER"
        ]
      },
      "ItemError": {
        "type": "object",
        "description": "An error about one record, zone or subscription inside a 200 answer: the request-level fields plus what it is about.",
        "required": [
          "uuid",
          "serverErrorCode",
          "reason"
        ],
        "properties": {
          "recordName": {
            "type": "string"
          },
          "zoneID": {
            "type": "object",
            "required": [
              "zoneName"
            ],
            "properties": {
              "zoneName": {
                "type": "string"
              }
            },
            "description": "The zone as the request named it."
          },
          "subscriptionID": {
            "type": "string"
          },
          "uuid": {
            "type": "string",
            "format": "uuid"
          },
          "serverErrorCode": {
            "$ref": "#/components/schemas/ServerErrorCode"
          },
          "reason": {
            "type": "string"
          },
          "retryAfter": {
            "type": "integer",
            "minimum": 0
          },
          "serverRecord": {
            "$ref": "#/components/schemas/Record",
            "description": "(Nimbus) CONFLICT carries the current record."
          }
        }
      },
      "ZoneID": {
        "type": "object",
        "required": [
          "zoneName"
        ],
        "properties": {
          "zoneName": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
          }
        }
      },
      "ZoneIDParameter": {
        "description": "A zone named in a request; absent or null means `_defaultZone`. A malformed one is a request-level BAD_REQUEST.",
        "anyOf": [
          {
            "$ref": "#/components/schemas/ZoneID"
          },
          {
            "type": "null"
          }
        ]
      },
      "DesiredKeys": {
        "description": "Field names to return (absent or null: all fields).",
        "anyOf": [
          {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          {
            "type": "null"
          }
        ]
      },
      "ResultsLimit": {
        "description": "Default 200; larger values are capped at maxResultsLimit (400).",
        "anyOf": [
          {
            "type": "integer",
            "minimum": 1,
            "maximum": 9223372036854775807
          },
          {
            "type": "null"
          }
        ]
      },
      "Wait": {
        "description": "(Nimbus) Seconds to hold the request when nothing is newer than the token (0–maxWaitSeconds, default limit 55). Waiting answers send their headers at once, chunked, with a space every heartbeatSeconds before the JSON.",
        "anyOf": [
          {
            "type": "integer",
            "minimum": 0,
            "maximum": 55
          },
          {
            "type": "null"
          }
        ]
      },
      "SyncToken": {
        "description": "An opaque token from an earlier answer; absent or null means from the beginning. A forged, foreign or malformed token is BAD_REQUEST; one older than the zone's horizon is CHANGE_TOKEN_EXPIRED (410).",
        "anyOf": [
          {
            "type": "string",
            "minLength": 1
          },
          {
            "type": "null"
          }
        ]
      },
      "FieldType": {
        "type": "string",
        "enum": [
          "STRING",
          "STRING_LIST",
          "INT64",
          "INT64_LIST",
          "DOUBLE",
          "DOUBLE_LIST",
          "TIMESTAMP",
          "TIMESTAMP_LIST",
          "BYTES",
          "BYTES_LIST",
          "REFERENCE",
          "REFERENCE_LIST",
          "ASSETID",
          "ASSETID_LIST"
        ]
      },
      "RecordStamp": {
        "type": "object",
        "required": [
          "timestamp",
          "userRecordName",
          "deviceID"
        ],
        "properties": {
          "timestamp": {
            "type": "integer",
            "description": "Milliseconds since the Unix epoch."
          },
          "userRecordName": {
            "type": "string"
          },
          "deviceID": {
            "type": "string"
          }
        }
      },
      "FieldValue": {
        "type": "object",
        "description": "A typed field value as answered. REFERENCE values are `{recordName, zoneID?, action}`; ASSETID values `{fileChecksum, size, downloadURL}`; BYTES are base64; TIMESTAMP milliseconds since the epoch; `_LIST` types arrays of the element form.",
        "required": [
          "value",
          "type"
        ],
        "properties": {
          "value": {
            "type": [
              "string",
              "number",
              "integer",
              "boolean",
              "array",
              "object"
            ]
          },
          "type": {
            "$ref": "#/components/schemas/FieldType"
          }
        }
      },
      "Record": {
        "type": "object",
        "required": [
          "recordName",
          "recordType",
          "recordChangeTag",
          "fields",
          "created",
          "modified",
          "deleted",
          "zoneID"
        ],
        "properties": {
          "recordName": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
          },
          "recordType": {
            "type": "string",
            "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
          },
          "recordChangeTag": {
            "type": "string",
            "minLength": 1
          },
          "fields": {
            "type": "object",
            "additionalProperties": {
              "$ref": "#/components/schemas/FieldValue"
            }
          },
          "created": {
            "$ref": "#/components/schemas/RecordStamp"
          },
          "modified": {
            "$ref": "#/components/schemas/RecordStamp"
          },
          "deleted": {
            "type": "boolean",
            "const": false
          },
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          }
        }
      },
      "DeletedRecord": {
        "type": "object",
        "description": "The answer item of a delete in records/modify.",
        "required": [
          "recordName",
          "deleted"
        ],
        "properties": {
          "recordName": {
            "type": "string"
          },
          "deleted": {
            "const": true
          }
        }
      },
      "Tombstone": {
        "type": "object",
        "description": "A deleted record in records/changes.",
        "required": [
          "recordName",
          "recordType",
          "deleted"
        ],
        "properties": {
          "recordName": {
            "type": "string"
          },
          "recordType": {
            "type": "string"
          },
          "deleted": {
            "const": true
          }
        }
      },
      "FieldInput": {
        "type": "object",
        "description": "A field as sent: `value` (null removes the field) and `type`, which may be omitted when the schema defines the field (in development an unknown field is typed from its JSON).",
        "required": [
          "value"
        ],
        "properties": {
          "value": {},
          "type": {
            "$ref": "#/components/schemas/FieldType"
          }
        }
      },
      "RecordOperation": {
        "type": "object",
        "description": "One operation of records/modify. A malformed operation is a BAD_REQUEST item in the 200 answer, not a request-level error. update, replace and delete need `recordChangeTag`; create, forceUpdate and forceReplace need `recordType`; an empty or missing `recordName` on create gets a server-generated UUID.",
        "required": [
          "operationType",
          "record"
        ],
        "properties": {
          "operationType": {
            "type": "string",
            "enum": [
              "create",
              "update",
              "forceUpdate",
              "replace",
              "forceReplace",
              "delete",
              "forceDelete"
            ]
          },
          "record": {
            "type": "object",
            "properties": {
              "recordName": {
                "type": "string",
                "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
              },
              "recordType": {
                "type": "string",
                "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
              },
              "recordChangeTag": {
                "type": "string"
              },
              "fields": {
                "type": "object",
                "additionalProperties": {
                  "$ref": "#/components/schemas/FieldInput"
                }
              }
            }
          },
          "desiredKeys": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        }
      },
      "ItemLevel": {
        "description": "Any other value is answered with a BAD_REQUEST item in the 200 answer (an item error, not a request-level error)."
      },
      "QueryFilter": {
        "type": "object",
        "description": "Several filters are ANDed. IN/NOT_IN take a `_LIST` value, LIST_CONTAINS an element value, `___recordID` a STRING record name. A value that does not fit the field's type is BAD_REQUEST.",
        "required": [
          "fieldName",
          "comparator",
          "fieldValue"
        ],
        "properties": {
          "fieldName": {
            "type": "string",
            "pattern": "^([A-Za-z][A-Za-z0-9_]{0,254}|___recordID|___createTime|___modTime)$"
          },
          "comparator": {
            "type": "string",
            "enum": [
              "EQUALS",
              "NOT_EQUALS",
              "LESS_THAN",
              "LESS_THAN_OR_EQUALS",
              "GREATER_THAN",
              "GREATER_THAN_OR_EQUALS",
              "IN",
              "NOT_IN",
              "BEGINS_WITH",
              "LIST_CONTAINS"
            ]
          },
          "fieldValue": {
            "type": "object",
            "required": [
              "value"
            ],
            "properties": {
              "value": {
                "type": [
                  "string",
                  "number",
                  "integer",
                  "boolean",
                  "array",
                  "object"
                ]
              },
              "type": {
                "anyOf": [
                  {
                    "$ref": "#/components/schemas/FieldType"
                  },
                  {
                    "type": "null"
                  }
                ]
              }
            }
          }
        }
      },
      "QuerySort": {
        "type": "object",
        "required": [
          "fieldName"
        ],
        "properties": {
          "fieldName": {
            "type": "string",
            "pattern": "^([A-Za-z][A-Za-z0-9_]{0,254}|___recordID|___createTime|___modTime)$"
          },
          "ascending": {
            "anyOf": [
              {
                "type": "boolean"
              },
              {
                "type": "null"
              }
            ]
          }
        }
      },
      "Query": {
        "type": "object",
        "required": [
          "recordType"
        ],
        "properties": {
          "recordType": {
            "type": "string",
            "pattern": "^[A-Za-z][A-Za-z0-9_]{0,254}$"
          },
          "filterBy": {
            "anyOf": [
              {
                "type": "array",
                "items": {
                  "$ref": "#/components/schemas/QueryFilter"
                }
              },
              {
                "type": "null"
              }
            ]
          },
          "sortBy": {
            "anyOf": [
              {
                "type": "array",
                "items": {
                  "$ref": "#/components/schemas/QuerySort"
                }
              },
              {
                "type": "null"
              }
            ]
          }
        }
      },
      "ZoneSummary": {
        "type": "object",
        "required": [
          "zoneID",
          "syncToken"
        ],
        "properties": {
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          },
          "syncToken": {
            "type": "string",
            "description": "The zone's current records/changes token."
          }
        }
      },
      "DeletedZone": {
        "type": "object",
        "required": [
          "zoneID",
          "deleted"
        ],
        "properties": {
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          },
          "deleted": {
            "const": true
          }
        }
      },
      "ZoneOperation": {
        "type": "object",
        "description": "Zone names starting with `_` are reserved (BAD_REQUEST item) except `_defaultZone`, whose create succeeds; deleting it is a BAD_REQUEST item; deleting a missing zone a ZONE_NOT_FOUND item.",
        "required": [
          "operationType",
          "zone"
        ],
        "properties": {
          "operationType": {
            "type": "string",
            "enum": [
              "create",
              "delete"
            ]
          },
          "zone": {
            "type": "object",
            "required": [
              "zoneID"
            ],
            "properties": {
              "zoneID": {
                "$ref": "#/components/schemas/ZoneID"
              }
            }
          }
        }
      },
      "NotificationInfo": {
        "type": "object",
        "properties": {
          "title": {
            "type": "string",
            "maxLength": 4096
          },
          "alertBody": {
            "type": "string",
            "maxLength": 4096
          },
          "alertLocalizationKey": {
            "type": "string",
            "maxLength": 4096
          },
          "soundName": {
            "type": "string",
            "maxLength": 4096
          },
          "shouldBadge": {
            "type": "boolean"
          },
          "shouldSendContentAvailable": {
            "type": "boolean"
          },
          "desiredKeys": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        }
      },
      "Subscription": {
        "type": "object",
        "required": [
          "subscriptionID",
          "subscriptionType",
          "firesOn",
          "firesOnce",
          "notificationInfo"
        ],
        "properties": {
          "subscriptionID": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
          },
          "subscriptionType": {
            "type": "string",
            "enum": [
              "query",
              "zone",
              "database"
            ]
          },
          "query": {
            "type": "object",
            "description": "As sent: {recordType, filterBy?}."
          },
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          },
          "firesOn": {
            "type": "array",
            "items": {
              "type": "string",
              "enum": [
                "create",
                "update",
                "delete"
              ]
            }
          },
          "firesOnce": {
            "type": "boolean"
          },
          "notificationInfo": {
            "$ref": "#/components/schemas/NotificationInfo"
          }
        }
      },
      "SubscriptionInput": {
        "type": "object",
        "description": "A query subscription needs `query`; a zone subscription `zoneID`; a database subscription takes no zoneID. firesOn defaults to all three.",
        "required": [
          "subscriptionID",
          "subscriptionType"
        ],
        "properties": {
          "subscriptionID": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.:-]{1,255}$"
          },
          "subscriptionType": {
            "type": "string",
            "enum": [
              "query",
              "zone",
              "database"
            ]
          },
          "query": {
            "$ref": "#/components/schemas/Query"
          },
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          },
          "firesOn": {
            "type": "array",
            "minItems": 1,
            "items": {
              "type": "string",
              "enum": [
                "create",
                "update",
                "delete"
              ]
            }
          },
          "firesOnce": {
            "type": "boolean"
          },
          "notificationInfo": {
            "$ref": "#/components/schemas/NotificationInfo"
          }
        }
      },
      "SubscriptionOperation": {
        "type": "object",
        "required": [
          "operationType",
          "subscription"
        ],
        "properties": {
          "operationType": {
            "type": "string",
            "enum": [
              "create",
              "update",
              "delete"
            ]
          },
          "subscription": {
            "$ref": "#/components/schemas/SubscriptionInput"
          }
        }
      },
      "DeletedSubscription": {
        "type": "object",
        "required": [
          "subscriptionID",
          "deleted"
        ],
        "properties": {
          "subscriptionID": {
            "type": "string"
          },
          "deleted": {
            "const": true
          }
        }
      },
      "Notification": {
        "type": "object",
        "required": [
          "notificationID",
          "subscriptionID",
          "notificationType",
          "reason",
          "recordName",
          "recordType",
          "zoneID",
          "contentAvailable"
        ],
        "properties": {
          "notificationID": {
            "type": "string"
          },
          "subscriptionID": {
            "type": "string"
          },
          "notificationType": {
            "type": "string",
            "enum": [
              "query",
              "zone",
              "database"
            ]
          },
          "reason": {
            "type": "string",
            "enum": [
              "recordCreated",
              "recordUpdated",
              "recordDeleted"
            ]
          },
          "recordName": {
            "type": "string"
          },
          "recordType": {
            "type": "string"
          },
          "zoneID": {
            "$ref": "#/components/schemas/ZoneID"
          },
          "alert": {
            "type": "object",
            "description": "Present when notificationInfo has a title, body, localization key or sound; absent members omitted.",
            "properties": {
              "title": {
                "type": "string"
              },
              "body": {
                "type": "string"
              },
              "localizationKey": {
                "type": "string"
              },
              "soundName": {
                "type": "string"
              }
            }
          },
          "contentAvailable": {
            "type": "boolean"
          },
          "fields": {
            "type": "object",
            "additionalProperties": {
              "$ref": "#/components/schemas/FieldValue"
            },
            "description": "The subscription's desiredKeys only."
          }
        }
      },
      "UploadedAsset": {
        "type": "object",
        "required": [
          "singleFile"
        ],
        "properties": {
          "singleFile": {
            "type": "object",
            "required": [
              "fileChecksum",
              "size",
              "receipt"
            ],
            "properties": {
              "fileChecksum": {
                "type": "string",
                "description": "Standard base64 of the SHA-256 of the bytes."
              },
              "size": {
                "type": "integer",
                "minimum": 0
              },
              "receipt": {
                "type": "string",
                "description": "Put {fileChecksum, size, receipt} with type ASSETID in a record field."
              }
            }
          }
        }
      },
      "Limits": {
        "type": "object",
        "description": "Every limit with its configured value.",
        "required": [
          "maxOperationsPerRequest",
          "maxRecordBytes",
          "maxRequestBytes",
          "maxResultsLimit",
          "maxWaitSeconds",
          "heartbeatSeconds",
          "maxAssetBytes",
          "maxAssetTokensPerRequest",
          "userQuotaBytes",
          "maxWaitersPerDevice",
          "maxWaiters",
          "notificationRetentionDays",
          "tombstoneRetentionDays",
          "maxRequestLineBytes",
          "maxHeaderLineBytes",
          "maxHeaderBytes",
          "maxHeaderCount",
          "headerTimeoutSeconds",
          "bodyTimeoutSeconds",
          "minBodyBytesPerSecond",
          "keepAliveTimeoutSeconds"
        ],
        "additionalProperties": {
          "type": "integer"
        }
      }
    }
  }
}
"""#
}
