"""People: a tenant's admins and attendants, signed in through the Cognito user pool."""
